// Cursor pagination for every list route: `limit` (default 20, max 100), an opaque `cursor`, and the page
// answer (a JSON array; `X-Next-Cursor` and `Link: <…>; rel="next"` only when there is a next page).
//
// A cursor is base64url(JSON {l: list, k: [key…]}): the sort key of the last row of the page, so the next page
// is a keyset read (`WHERE key > last`), stable under concurrent inserts, never an offset. Naming the list
// makes a cursor of one list a 422 on another. Key parts are strings; times carry microseconds (what
// timestamptz holds), so a keyset comparison never skips rows that share a millisecond.
import { validationError } from '../../errors.js';
import Type, { type TSchema } from 'typebox';
import type { Request, Response, RouteDoc } from './router.js';
import { isUuid } from '../../app/fields.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/** `time`: ISO 8601 UTC with 6 fractional digits; `uuid`; `text`: any non-empty string. */
export type KeyPart = 'time' | 'uuid' | 'text';
type KeyOf<P extends readonly KeyPart[]> = { -readonly [I in keyof P]: string };

export interface CursorCodec<K extends string[]> {
  encode(key: K): string;
  /** The key, or 422 validation_error on `cursor` for anything this list did not issue. */
  decode(raw: string): K;
}

const TIME = /^(\d{4})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
/** A cursor is a few dozen bytes; refuse to decode anything much larger. */
const MAX_CURSOR_CHARS = 2048;

const badCursor = () => validationError([{ field: 'cursor', message: 'is not a cursor issued by this list' }], 'cursor is not valid');

/** Valid means the store will accept it too: a tampered time like 2030-02-30 must be a 422, not a 500. */
function validPart(kind: KeyPart, v: unknown): v is string {
  if (typeof v !== 'string') return false;
  switch (kind) {
    case 'uuid':
      return isUuid(v);
    case 'text':
      return v.length > 0 && v.length <= 1000;
    case 'time': {
      const m = TIME.exec(v);
      if (!m || Number(m[1]) < 1) return false;
      const ms = `${v.slice(0, 23)}Z`;
      const d = new Date(ms);
      return !Number.isNaN(d.getTime()) && d.toISOString() === ms;
    }
  }
}

export function cursorCodec<const P extends readonly KeyPart[]>(list: string, parts: P): CursorCodec<KeyOf<P>> {
  return {
    encode: (key) => Buffer.from(JSON.stringify({ l: list, k: key })).toString('base64url'),
    decode: (raw) => {
      if (raw.length === 0 || raw.length > MAX_CURSOR_CHARS || !BASE64URL.test(raw)) throw badCursor();
      let parsed: unknown;
      try {
        parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
      } catch {
        throw badCursor();
      }
      if (parsed === null || typeof parsed !== 'object') throw badCursor();
      const { l, k } = parsed as { l?: unknown; k?: unknown };
      if (l !== list || !Array.isArray(k) || k.length !== parts.length) throw badCursor();
      if (!parts.every((kind, i) => validPart(kind, k[i]))) throw badCursor();
      return k as KeyOf<P>;
    },
  };
}

/** `limit`: an integer 1…100, default 20. */
export function parseLimit(q: URLSearchParams): number {
  const all = q.getAll('limit');
  if (all.length === 0) return DEFAULT_LIMIT;
  const raw = all[0]!;
  const n = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
  if (all.length > 1 || !(n >= 1 && n <= MAX_LIMIT)) {
    throw validationError([{ field: 'limit', message: `must be an integer from 1 to ${MAX_LIMIT}` }], `limit must be an integer from 1 to ${MAX_LIMIT}`);
  }
  return n;
}

/** The decoded `cursor`, or null on the first page. */
export function readCursor<K extends string[]>(q: URLSearchParams, codec: CursorCodec<K>): K | null {
  const all = q.getAll('cursor');
  if (all.length === 0) return null;
  if (all.length > 1) throw badCursor();
  return codec.decode(all[0]!);
}

/**
 * The page answer. `rows` is what the store returned for `limit + 1`: one row more than the page says there
 * is a next page, whose cursor is the key of the page's last row. The Link repeats the request's query with
 * only the cursor replaced, so the filters carry over.
 */
export function pageResponse<R, K extends string[]>(
  req: Request,
  rows: R[],
  limit: number,
  codec: CursorCodec<K>,
  keyOf: (row: R) => K,
  present: (row: R) => unknown,
): Response {
  const page = rows.slice(0, limit);
  const body = page.map(present);
  if (rows.length <= limit) return { status: 200, body };
  const next = codec.encode(keyOf(page[page.length - 1]!));
  const query = new URLSearchParams(req.query);
  query.delete('cursor');
  query.set('cursor', next);
  return { status: 200, body, headers: { 'x-next-cursor': next, link: `<${req.path}?${query.toString()}>; rel="next"` } };
}

/** What the OpenAPI document says of every paged list: `limit` and `cursor` (plus its own filters), and a page of `item`. */
export function pagedDoc(description: string, item: TSchema, filters: NonNullable<RouteDoc['query']> = {}): Pick<RouteDoc, 'query' | 'responses'> {
  return {
    query: {
      limit: { schema: Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT }), description: 'page size' },
      cursor: { schema: Type.String(), description: 'X-Next-Cursor of the previous page (opaque)' },
      ...filters,
    },
    responses: {
      200: {
        description,
        schema: Type.Array(item),
        headers: {
          'X-Next-Cursor': 'the cursor of the next page; absent on the last page',
          Link: '<{path}?{same query}&cursor={next}>; rel="next"; absent on the last page',
        },
      },
    },
  };
}
