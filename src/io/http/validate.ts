// Compiled typebox validators; a failure becomes 422 validation_error with `details: [{field, message}]`.
import type { Static, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { validationError, type FieldProblem } from '../../errors.js';

export interface Validator<T> {
  (value: unknown): T;
  schema: TSchema;
}

export function validator<S extends TSchema>(schema: S): Validator<Static<S>> {
  const compiled = Compile(schema);
  const check = (input: unknown): Static<S> => {
    // An empty body is accepted as `{}`: routes whose fields are all optional then pass, and the others report
    // each missing field rather than "(body) must be object".
    const value = input === undefined ? {} : input;
    if (compiled.Check(value)) return value as Static<S>;
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
    }
    const first = details[0];
    throw validationError(details, first ? `${first.field} ${first.message}` : 'The request is invalid');
  };
  return Object.assign(check, { schema });
}
