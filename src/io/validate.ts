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

/**
 * Walks the schema beside the value through properties, items and unions, calling `at` on every array schema
 * with an array and every object schema with an object.
 */
function walkSized(schema: unknown, value: unknown, field: string, at: (s: Json, v: unknown[] | Json, field: string) => FieldProblem | null): FieldProblem | null {
  if (schema === null || typeof schema !== 'object') return null;
  const s = schema as Json;
  if (Array.isArray(s.anyOf)) {
    for (const branch of s.anyOf) {
      const p = walkSized(branch, value, field, at);
      if (p) return p;
    }
    return null;
  }
  if (Array.isArray(value) && s.type === 'array') {
    const p = at(s, value, field);
    if (p) return p;
    if (s.items && typeof s.items === 'object') {
      for (let i = 0; i < value.length; i++) {
        const q = walkSized(s.items, value[i], join(field, i), at);
        if (q) return q;
      }
    }
    return null;
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && s.type === 'object') {
    const p = at(s, value as Json, field);
    if (p) return p;
    if (s.properties && typeof s.properties === 'object') {
      for (const [k, sub] of Object.entries(s.properties as Json)) {
        if (!Object.hasOwn(value, k)) continue;
        const q = walkSized(sub, (value as Json)[k], join(field, k), at);
        if (q) return q;
      }
    }
  }
  return null;
}

/** Length in code points, as JSON Schema (and typebox) count it. */
function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

const tooMany = (s: Json, v: unknown[] | Json, field: string): FieldProblem | null => {
  const where = field || '(body)';
  if (Array.isArray(v)) return typeof s.maxItems === 'number' && v.length > s.maxItems ? { field: where, message: `must have at most ${s.maxItems} items` } : null;
  const names = s.propertyNames as Json | undefined;
  if (typeof s.maxProperties !== 'number' && !names) return null;
  const keys = Object.keys(v);
  if (typeof s.maxProperties === 'number' && keys.length > s.maxProperties) return { field: where, message: `must have at most ${s.maxProperties} properties` };
  const min = typeof names?.minLength === 'number' ? names.minLength : 0;
  const max = typeof names?.maxLength === 'number' ? names.maxLength : Infinity;
  for (const k of keys) {
    // The key itself is not echoed: it may be a megabyte long.
    const n = k.length > max || k.length < 2 * min ? codePoints(k) : k.length;
    if (n < min || n > max) return { field: where, message: `must have keys of ${min} to ${max} characters` };
  }
  return null;
};

const duplicate = (s: Json, v: unknown[] | Json, field: string): FieldProblem | null => {
  if (s.uniqueItems !== true || !Array.isArray(v)) return null;
  const seen = new Set<string>();
  for (const item of v) {
    const key = typeof item === 'string' ? `s${item}` : `j${JSON.stringify(item)}`;
    if (seen.has(key)) return { field: field || '(body)', message: 'must not contain duplicate items' };
    seen.add(key);
  }
  return null;
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
    const long = walkSized(schema, value, '', tooMany);
    if (long) fail([long]);
    if (compiled.Check(value)) {
      const dup = walkSized(schema, value, '', duplicate);
      if (dup) fail([dup]);
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
