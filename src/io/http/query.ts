// Query-string parameters of the read routes. Every parameter given must be valid, an empty value too: a
// mistyped value is a 422, not a silently wider answer. So is a parameter given twice, except those that say
// they repeat (tag, ids); an alias may be given beside its name when both agree. Unknown parameters are ignored.
import { validationError } from '../../errors.js';
import { parseTime } from '../../app/fields.js';

const invalid = (field: string, message: string) => validationError([{ field, message }], `${field} ${message}`);

/** The one value of `name` (or of one of its aliases, which must agree), or null when absent. */
export function single(q: URLSearchParams, name: string, ...aliases: string[]): string | null {
  const names = [name, ...aliases];
  if (names.some((n) => q.getAll(n).length > 1)) throw invalid(name, 'is given more than once');
  const values = names.flatMap((n) => q.getAll(n));
  if (values.length === 0) return null;
  if (new Set(values).size > 1) throw invalid(name, `and its alias ${aliases.join(', ')} disagree`);
  return values[0]!;
}

/** `value` must be one of `allowed`. */
export function oneOf<T extends string>(field: string, value: string | null, allowed: readonly T[]): T | null {
  if (value === null) return null;
  if (!(allowed as readonly string[]).includes(value)) throw invalid(field, `must be one of ${allowed.join(', ')}`);
  return value as T;
}

/** An ISO 8601 timestamp with a time zone (the rules of the write routes), as a Date. */
export function isoTime(field: string, value: string | null): Date | null {
  const t = parseTime(field, value);
  return t === null ? null : new Date(t);
}

/** `tag=key` (the key is present) or `tag=key:value` (it has that value); repeatable, all must hold. */
export function tagFilters(q: URLSearchParams): { keys: string[]; values: Record<string, string> } {
  const keys: string[] = [];
  // A Map, not an object literal: a key named __proto__ must stay a key.
  const values = new Map<string, string>();
  const all = q.getAll('tag');
  if (all.length > 20) throw invalid('tag', 'is given more than 20 times');
  for (const t of all) {
    const i = t.indexOf(':');
    const key = i < 0 ? t : t.slice(0, i);
    if (key.length === 0 || key.length > 100) throw invalid('tag', 'must be "key" or "key:value" with a key of 1 to 100 characters');
    if (i < 0) keys.push(key);
    else {
      const value = t.slice(i + 1);
      if (values.has(key) && values.get(key) !== value) throw invalid('tag', `asks for two values of "${key}"`);
      values.set(key, value);
    }
  }
  return { keys, values: Object.fromEntries(values) };
}
