// Loads uWebSockets.js from the republished npm builds: the newer one needs glibc >= 2.38, the older one
// runs on glibc 2.36 but on Node >= 22 silently degrades to a partial JS shim (no WebSocket upgrade, no
// backpressure), which we refuse rather than run on.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const BUILDS = ['@btc-vision/uwebsockets.js', '@trufflesuite/uws-js-unofficial'] as const;

export type UWS = typeof import('@trufflesuite/uws-js-unofficial');
export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, WebSocket } from '@trufflesuite/uws-js-unofficial';

/**
 * The request head uWS buffers before it gives up with its own HTML 431. 20.57 reads it from the environment when
 * it loads (4 KiB unless set), which would refuse heads our own limits (server.ts: an 8 KiB target, 32 KiB of
 * headers) answer in the catalog's shape; 64 KiB lets every such head reach them. 20.30 ignores the setting (it
 * takes heads up to about 120 KiB and resets the connection beyond).
 */
export const UWS_HEAD_BYTES = 64 * 1024;

let loaded: UWS | null = null;
let loadedName: (typeof BUILDS)[number] | null = null;

/** Which build loadUws() loaded, or null before it ran: what malformed HTTP gets depends on it (docs/api.md). */
export const loadedBuild = () => loadedName;

export function loadUws(): UWS {
  if (loaded) return loaded;
  const reasons: string[] = [];
  // Not configuration: a value of ours that the library takes only through its environment.
  process.env.UWS_HTTP_MAX_HEADERS_SIZE = String(UWS_HEAD_BYTES);
  for (const name of BUILDS) {
    try {
      const uws = require(name) as UWS;
      if (typeof (uws as any).getParts !== 'function') {
        reasons.push(`${name}: loaded a JS fallback without native support on Node ${process.version}`);
        continue;
      }
      loaded = uws;
      loadedName = name;
      return uws;
    } catch (err) {
      reasons.push(`${name}: ${((err as Error).message.split('\n').pop() ?? '').trim()}`);
    }
  }
  throw new Error(`no usable uWebSockets.js build:\n  - ${reasons.join('\n  - ')}`);
}
