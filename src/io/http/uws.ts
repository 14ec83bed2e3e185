// Loads uWebSockets.js from the republished npm builds: the newer one needs glibc >= 2.38, the older one
// runs on glibc 2.36 but on Node >= 22 silently degrades to a partial JS shim (no WebSocket upgrade, no
// backpressure), which we refuse rather than run on.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const BUILDS = ['@btc-vision/uwebsockets.js', '@trufflesuite/uws-js-unofficial'] as const;

export type UWS = typeof import('@trufflesuite/uws-js-unofficial');
export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, WebSocket } from '@trufflesuite/uws-js-unofficial';

let loaded: UWS | null = null;
let loadedName: (typeof BUILDS)[number] | null = null;

/** Which build loadUws() loaded, or null before it ran: what malformed HTTP gets depends on it (docs/api.md). */
export const loadedBuild = () => loadedName;

export function loadUws(): UWS {
  if (loaded) return loaded;
  const reasons: string[] = [];
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
