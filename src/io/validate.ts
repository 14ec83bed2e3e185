// Compiled typebox validators; a failure becomes 422 validation_error with `details: [{field, message}]`.
//
// Some checks run outside typebox because its cost grows with hostile input: `maxItems`, and `maxProperties`
// with the length of `propertyNames` on an object map, are checked before anything else (typebox's error
// listing would otherwise visit every one of 100,000 items, and 49,000 keys cost it 1.3 s), and `uniqueItems`
// is checked in linear time after the rest passes (typebox compares every pair: 100,000 permissions blocked
// the thread for 102 s). The schemas keep these keywords, so the OpenAPI document still states them; typebox
// does not check a Record's key schema at all, which is why map keys are bounded by `propertyNames`.
import type { Static, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { validationError, type FieldProblem } from '../errors.js';

export interface Validator<T> {
  (value: unknown): T;
  schema: TSchema;
}

/** What a validator lets through: the type of an input once validated. */
export type Valid<V> = V extends Validator<infer T> ? T : never;

type Json = Record<string, unknown>;

/** A copy of the schema without `uniqueItems`, which `uniqueProblem` checks instead. */
function withoutUnique(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutUnique);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries(schema)) if (k !== 'uniqueItems') out[k] = withoutUnique(v);
  // typebox marks its schemas with symbol keys (the kind); Object.entries skips them.
  for (const s of Object.getOwnPropertySymbols(schema)) (out as Record<symbol, unknown>)[s] = (schema as Record<symbol, unknown>)[s];
  return out;
}

const join = (base: string, key: string | number) => (typeof key === 'number' ? `${base}[${key}]` : base ? `${base}.${key}` : key);

/** A size or uniqueness check: what is wrong with a value at a schema, and the keywords it reads. */
interface Check {
  find(s: Json, v: unknown[] | Json): string | null;
  keys: readonly string[];
}

/** A problem found at `path` below the value walked (built on the way back up: only a failing walk pays for it). */
interface Found {
  path: Array<string | number>;
  message: string;
}

/** Per check, per schema: whether the check can find anything at or below it (most subschemas: no). */
const reaches = new WeakMap<Check, WeakMap<object, boolean>>();
/** A schema's properties as entries, listed once. */
const propertyLists = new WeakMap<object, Array<[string, unknown]>>();

function propertiesOf(s: Json): Array<[string, unknown]> {
  let list = propertyLists.get(s);
  if (!list) propertyLists.set(s, (list = s.properties && typeof s.properties === 'object' ? Object.entries(s.properties as Json) : []));
  return list;
}

/**
 * Whether `check` may find a problem at or below `schema`. `visiting` (made on the first miss, so that a cached
 * answer allocates nothing) holds the schemas being decided: one that contains itself is walked as if it could.
 */
function reachable(check: Check, schema: unknown, visiting: Set<object> | null = null): boolean {
  if (schema === null || typeof schema !== 'object') return false;
  let known = reaches.get(check);
  if (!known) reaches.set(check, (known = new WeakMap()));
  const cached = known.get(schema);
  if (cached !== undefined) return cached;
  const seen = visiting ?? new Set<object>();
  if (seen.has(schema)) return true;
  seen.add(schema);
  const s = schema as Json;
  const below = (sub: unknown) => reachable(check, sub, seen);
  const result =
    check.keys.some((k) => k in s) ||
    (Array.isArray(s.anyOf) && s.anyOf.some(below)) ||
    below(s.items) ||
    propertiesOf(s).some(([, sub]) => below(sub));
  seen.delete(schema);
  known.set(schema, result);
  return result;
}

/**
 * Walks the schema beside the value through properties, items and unions, running the check on every array schema
 * with an array and every object schema with an object, skipping the subschemas where it can find nothing.
 */
function walkSized(schema: unknown, value: unknown, check: Check): Found | null {
  if (!reachable(check, schema)) return null;
  const s = schema as Json;
  if (Array.isArray(s.anyOf)) {
    for (const branch of s.anyOf) {
      const p = walkSized(branch, value, check);
      if (p) return p;
    }
    return null;
  }
  if (Array.isArray(value) && s.type === 'array') {
    const message = check.find(s, value);
    if (message) return { path: [], message };
    if (s.items && typeof s.items === 'object' && reachable(check, s.items)) {
      for (let i = 0; i < value.length; i++) {
        const q = walkSized(s.items, value[i], check);
        if (q) return (q.path.unshift(i), q);
      }
    }
    return null;
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && s.type === 'object') {
    const message = check.find(s, value as Json);
    if (message) return { path: [], message };
    for (const [k, sub] of propertiesOf(s)) {
      if (!Object.hasOwn(value, k)) continue;
      const q = walkSized(sub, (value as Json)[k], check);
      if (q) return (q.path.unshift(k), q);
    }
  }
  return null;
}

/** The problem as the API reports it: its field from the path (the body itself when empty). */
function problemOf(found: Found): FieldProblem {
  return { field: found.path.reduce<string>(join, '') || '(body)', message: found.message };
}

/** Length in code points, as JSON Schema (and typebox) count it. */
function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

const tooMany: Check = {
  keys: ['maxItems', 'maxProperties', 'propertyNames'],
  find(s, v) {
    if (Array.isArray(v)) return typeof s.maxItems === 'number' && v.length > s.maxItems ? `must have at most ${s.maxItems} items` : null;
    const names = s.propertyNames as Json | undefined;
    if (typeof s.maxProperties !== 'number' && !names) return null;
    const keys = Object.keys(v);
    if (typeof s.maxProperties === 'number' && keys.length > s.maxProperties) return `must have at most ${s.maxProperties} properties`;
    const min = typeof names?.minLength === 'number' ? names.minLength : 0;
    const max = typeof names?.maxLength === 'number' ? names.maxLength : Infinity;
    for (const k of keys) {
      // The key itself is not echoed: it may be a megabyte long.
      const n = k.length > max || k.length < 2 * min ? codePoints(k) : k.length;
      if (n < min || n > max) return `must have keys of ${min} to ${max} characters`;
    }
    return null;
  },
};

const duplicate: Check = {
  keys: ['uniqueItems'],
  find(s, v) {
    if (s.uniqueItems !== true || !Array.isArray(v)) return null;
    const seen = new Set<string>();
    for (const item of v) {
      const key = typeof item === 'string' ? `s${item}` : `j${JSON.stringify(item)}`;
      if (seen.has(key)) return 'must not contain duplicate items';
      seen.add(key);
    }
    return null;
  },
};

export function validator<S extends TSchema>(schema: S): Validator<Static<S>> {
  const compiled = Compile(withoutUnique(schema) as S);
  const fail = (details: FieldProblem[]): never => {
    const first = details[0];
    throw validationError(details, first ? `${first.field} ${first.message}` : 'The request is invalid');
  };
  const check = (input: unknown): Static<S> => {
    // An empty body is accepted as `{}`: routes whose fields are all optional then pass, and the others report
    // each missing field rather than "(body) must be object".
    const value = input === undefined ? {} : input;
    const long = walkSized(schema, value, tooMany);
    if (long) fail([problemOf(long)]);
    if (compiled.Check(value)) {
      const dup = walkSized(schema, value, duplicate);
      if (dup) fail([problemOf(dup)]);
      return value as Static<S>;
    }
    const details: FieldProblem[] = [];
    for (const e of compiled.Errors(value)) {
      if (e.keyword === 'boolean') continue;
      const base = e.instancePath.replace(/^\//, '').replaceAll('/', '.');
      const params = e.params as Record<string, unknown>;
      if (e.keyword === 'required' && Array.isArray(params.requiredProperties)) {
        for (const name of params.requiredProperties as string[]) {
          details.push({ field: base ? `${base}.${name}` : name, message: 'is required' });
        }
      } else {
        details.push({ field: base || '(body)', message: e.message });
      }
      // A value with thousands of wrong items would list them all; the first few say enough.
      if (details.length >= 20) break;
    }
    return fail(details);
  };
  return Object.assign(check, { schema });
}
