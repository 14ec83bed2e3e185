// The checks the validator runs outside typebox (maxItems, maxProperties and key lengths before anything else,
// uniqueItems after): each names the field where it failed, however deep, and the subschemas where they can find
// nothing are skipped without changing what is found.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Type from 'typebox';
import { AppError } from '../src/errors.js';
import { validator } from '../src/io/validate.js';

const Item = Type.Object({
  name: Type.String(),
  tags: Type.Optional(Type.Union([Type.Record(Type.String(), Type.String(), { maxProperties: 2, propertyNames: Type.String({ minLength: 1, maxLength: 4 }) }), Type.Array(Type.String(), { maxItems: 2 })])),
  deps: Type.Optional(Type.Array(Type.String(), { uniqueItems: true })),
  note: Type.Optional(Type.Object({ text: Type.String() })),
});
const Body = Type.Object({ items: Type.Array(Item, { maxItems: 3 }), plain: Type.Optional(Type.Object({ a: Type.Object({ b: Type.String() }) })) });
const check = validator(Body);

function problem(value: unknown): { field: string; message: string } {
  try {
    check(value);
  } catch (err) {
    assert.ok(err instanceof AppError);
    const details = (err.toBody() as { details: Array<{ field: string; message: string }> }).details;
    return details[0]!;
  }
  assert.fail('accepted');
}

test('size and uniqueness problems name their field at any depth; valid bodies pass untouched', () => {
  const ok = { items: [{ name: 'a', tags: { x: '1' }, deps: ['p', 'q'] }, { name: 'b', tags: ['t'], note: { text: 'n' } }], plain: { a: { b: 'c' } } };
  assert.deepEqual(check(ok), ok);
  assert.deepEqual(problem({ items: [{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 'd' }] }), { field: 'items', message: 'must have at most 3 items' });
  assert.deepEqual(problem({ items: [{ name: 'a' }, { name: 'b', tags: { x: '1', y: '2', z: '3' } }] }), { field: 'items[1].tags', message: 'must have at most 2 properties' });
  assert.deepEqual(problem({ items: [{ name: 'a', tags: { toolong: '1' } }] }), { field: 'items[0].tags', message: 'must have keys of 1 to 4 characters' });
  assert.deepEqual(problem({ items: [{ name: 'a', tags: ['1', '2', '3'] }] }), { field: 'items[0].tags', message: 'must have at most 2 items' });
  assert.deepEqual(problem({ items: [{ name: 'a' }, { name: 'b' }, { name: 'c', deps: ['p', 'p'] }] }), { field: 'items[2].deps', message: 'must not contain duplicate items' });
  const Top = validator(Type.Array(Type.String(), { maxItems: 1, uniqueItems: true }));
  assert.throws(() => Top(['a', 'b']), (e: unknown) => e instanceof AppError && /\(body\) must have at most 1 items/.test(e.message));
});
