// Hostile input, refused once at the door (REST and gRPC alike) so that nothing below has to defend itself:
// JSON nested deeper than the configured depth, and strings PostgreSQL cannot store (NUL, which neither text
// nor jsonb accepts, and lone UTF-16 surrogates, which have no UTF-8 form) anywhere in a body, a query or a
// path. Field lengths, array sizes and object sizes are the schemas' business (src/io/validate.ts).
import { validationError, type FieldProblem } from '../errors.js';

/** Bounds of a request body when the configuration does not say (BODY_MAX_DEPTH, BODY_MAX_VALUES). */
export const DEFAULT_MAX_DEPTH = 64;
export const DEFAULT_MAX_VALUES = 50_000;

/** True when PostgreSQL can store the string as text or inside jsonb. */
export function storable(s: string): boolean {
  return !s.includes('\0') && s.isWellFormed();
}

const OPEN = 0x5b; // [
const OPEN_OBJ = 0x7b; // {
const CLOSE = 0x5d;
const CLOSE_OBJ = 0x7d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

const COLON = 0x3a;
const COMMA = 0x2c;

/**
 * What is wrong with the shape of a JSON text, counted on the raw bytes before it is parsed, or null. JSON.parse
 * of a 4 MiB body of brackets (two million levels) blocks the thread for over a second, and its cost grows with
 * the number of values (about 1 µs per distinct object key here), so both are bounded before parsing: this scan
 * takes a few milliseconds per MiB. Values are object members plus array elements.
 */
export function scanJson(raw: Uint8Array, maxDepth: number, maxValues: number): 'depth' | 'values' | null {
  // A text of n bytes nests at most n / 2 levels and holds at most n / 2 values.
  if (raw.length <= 2 * Math.min(maxDepth, maxValues)) return null;
  let depth = 0;
  let values = 0;
  let inString = false;
  /** Per open container, whether it is an array (its commas separate values; an object's come with a colon). */
  const arrays: boolean[] = [];
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    switch (c) {
      case QUOTE:
        inString = true;
        break;
      case OPEN:
      case OPEN_OBJ:
        if (++depth > maxDepth) return 'depth';
        arrays[depth] = c === OPEN;
        // An array's first element has no comma before it: count it on the way in (an empty array overcounts one).
        if (c === OPEN && ++values > maxValues) return 'values';
        break;
      case CLOSE:
      case CLOSE_OBJ:
        depth--;
        break;
      case COLON:
        if (++values > maxValues) return 'values';
        break;
      case COMMA:
        if (arrays[depth] && ++values > maxValues) return 'values';
        break;
    }
  }
  return null;
}

interface Node {
  v: unknown;
  depth: number;
  /** Where it sits, kept as a chain so that a path is only spelt out for the one value reported. */
  parent: Node | null;
  key: string | number;
}

function fieldOf(node: Node, root: string): string {
  const parts: Array<string | number> = [];
  for (let n: Node | null = node; n !== null && n.parent !== null; n = n.parent) parts.push(n.key);
  if (parts.length === 0) return root;
  let out = '';
  for (let i = parts.length - 1; i >= 0; i--) {
    const k = parts[i]!;
    out = typeof k === 'number' ? `${out}[${k}]` : out === '' ? k : `${out}.${k}`;
  }
  return out;
}

/**
 * The first problem of a parsed value (a body, or a request converted from protobuf): too deep, or a key or
 * string that cannot be stored. Iterative, so a deep value cannot exhaust the stack; each node is visited once.
 */
export function inspect(value: unknown, maxDepth: number, root = '(body)'): FieldProblem | null {
  const stack: Node[] = [{ v: value, depth: 0, parent: null, key: '' }];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const v = node.v;
    if (typeof v === 'string') {
      if (!storable(v)) return { field: fieldOf(node, root), message: 'contains a NUL character or an unpaired surrogate, which cannot be stored' };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (node.depth >= maxDepth) return { field: fieldOf(node, root), message: `nests deeper than ${maxDepth} levels` };
    const depth = node.depth + 1;
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) {
        const item = v[i];
        // Scalars other than strings need no visit.
        if (typeof item === 'string' ? !storable(item) : item !== null && typeof item === 'object') stack.push({ v: item, depth, parent: node, key: i });
      }
      continue;
    }
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      if (!storable(k)) return { field: fieldOf({ v: null, depth, parent: node, key: k }, root), message: 'is a key with a NUL character or an unpaired surrogate, which cannot be stored' };
      const item = (v as Record<string, unknown>)[k];
      if (typeof item === 'string' ? !storable(item) : item !== null && typeof item === 'object') stack.push({ v: item, depth, parent: node, key: k });
    }
  }
  return null;
}

/** Throws 422 validation_error naming the field when `inspect` finds a problem. */
export function assertClean(value: unknown, maxDepth: number, root = '(body)'): void {
  const problem = inspect(value, maxDepth, root);
  if (problem) throw validationError([problem], `${problem.field} ${problem.message}`);
}

/** Query parameters and path parameters: names and values must be storable (a NUL in `?tag=` reaches SQL). */
export function assertCleanParams(query: URLSearchParams, params: Record<string, string>): void {
  for (const [k, v] of query) {
    if (!storable(k) || !storable(v)) {
      const field = storable(k) ? `query.${k}` : 'query';
      throw validationError([{ field, message: 'contains a NUL character or an unpaired surrogate' }], `${field} contains a NUL character or an unpaired surrogate`);
    }
  }
  for (const [k, v] of Object.entries(params)) {
    if (!storable(v)) {
      throw validationError([{ field: `path.${k}`, message: 'contains a NUL character or an unpaired surrogate' }], `path.${k} contains a NUL character or an unpaired surrogate`);
    }
  }
}
