// The dashboard: the static files `make ui` builds into ui/dist (ui/README.md), served at /ui. The page is a
// client of the public API like any other; these routes only hand out its files and need no credential.
//
// Asset names carry a content hash, so they are cached for a year; index.html names them and is revalidated
// on every load. Every answer carries a Content-Security-Policy that allows scripts, styles and connections
// from this origin only: no inline script, no eval, nothing from a CDN, and no framing.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Type from 'typebox';
import { notFound } from '../../../errors.js';
import type { Response, Route } from '../router.js';

/** ui/dist from src/io/http/routes (tsx) and from dist/io/http/routes (the compiled build) alike. */
export const UI_DIR = fileURLToPath(new URL('../../../../ui/dist/', import.meta.url));

export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  // The sign-in form is handled by script; should script fail, the browser must not send the key anywhere.
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/** Text files only: the server writes string bodies. The build emits nothing else. */
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.map': 'application/json; charset=utf-8',
};

interface Files {
  index: string;
  assets: Map<string, { body: string; type: string }>;
}

/** Read once, on the first request that finds them: a node started before `make ui` ran picks them up later. */
function load(dir: string): Files | null {
  let index: string;
  try {
    index = fs.readFileSync(path.join(dir, 'index.html'), 'utf8');
  } catch {
    return null;
  }
  const assets = new Map<string, { body: string; type: string }>();
  const assetDir = path.join(dir, 'assets');
  for (const name of fs.existsSync(assetDir) ? fs.readdirSync(assetDir) : []) {
    const type = TYPES[path.extname(name)];
    if (type) assets.set(name, { body: fs.readFileSync(path.join(assetDir, name), 'utf8'), type });
  }
  return { index, assets };
}

export function uiRoutes(dir: string = UI_DIR): Route[] {
  let files: Files | null = null;
  const get = () => (files ??= load(dir));

  const page = (): Response => {
    const f = get();
    if (!f) {
      return {
        status: 503,
        headers: { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...SECURITY_HEADERS },
        body: 'The dashboard is not built. `make run` and `make build` build it; so does `make ui`.\n',
      };
    }
    return { status: 200, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache', ...SECURITY_HEADERS }, body: f.index };
  };

  const asset = (name: string): Response => {
    const file = get()?.assets.get(name);
    if (!file) throw notFound('Asset');
    return { status: 200, headers: { 'content-type': file.type, 'cache-control': 'public, max-age=31536000, immutable', ...SECURITY_HEADERS }, body: file.body };
  };

  return [
    {
      method: 'GET',
      path: '/',
      permission: null,
      handler: () => ({ status: 302, headers: { location: '/ui/', 'cache-control': 'no-cache' } }),
      doc: {
        operationId: 'redirectToDashboard',
        summary: 'Redirects to the dashboard',
        responses: { 302: { description: 'To the dashboard', headers: { Location: '/ui/' } } },
      },
    },
    {
      // The router ignores a trailing slash: /ui and /ui/ are this one route. Asset URLs in the page are
      // absolute, so both work.
      method: 'GET',
      path: '/ui',
      permission: null,
      handler: page,
      doc: {
        operationId: 'getDashboard',
        summary: 'The dashboard (HTML; sign in with an API key)',
        responses: {
          200: { description: 'The page', mediaType: 'text/html', schema: Type.String() },
          503: { description: 'The dashboard was not built', mediaType: 'text/plain', schema: Type.String() },
        },
      },
    },
    {
      method: 'GET',
      path: '/ui/assets/:file',
      permission: null,
      handler: (req) => asset(req.params.file!),
      doc: {
        operationId: 'getDashboardAsset',
        summary: "The dashboard's scripts and styles (content-hashed names, cached for a year)",
        responses: { 200: { description: 'JavaScript, CSS or SVG', mediaType: '*/*', schema: Type.String() } },
      },
    },
  ];
}
