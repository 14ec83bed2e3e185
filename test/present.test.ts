// Timestamps leave as ISO 8601 UTC whatever shape they come in: the text row_to_json writes (rewritten, not parsed,
// when it is UTC), a Date, epoch milliseconds. The rewrite must agree with a parse for every shape it accepts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isoOf } from '../src/io/present.js';

test('isoOf agrees with Date parsing for every shape of row_to_json text, Dates and epoch milliseconds', () => {
  const texts = [
    '2026-11-27T23:34:06.643123+00:00',
    '2026-01-01T00:00:00.000001+00:00',
    '2026-11-27T23:34:06.999999+00:00',
    '1999-12-31T23:59:59.123456+00:00',
    // Times written in milliseconds (what the journal stores): PostgreSQL drops the fraction's trailing zeros.
    '2026-11-27T23:34:06.418+00:00',
    '2026-11-27T23:34:06.41+00:00',
    '2026-11-27T23:34:06.4+00:00',
    '2026-11-27T23:34:06+00:00',
    '2026-11-27T23:34:06.41234+00:00',
    // Another session zone is parsed.
    '2026-11-27T23:34:06.64+01:00',
    '2026-11-27T23:34:06.643123+01:00',
    '2026-11-27T23:34:06.643123-05:30',
  ];
  for (const t of texts) assert.equal(isoOf(t), new Date(t).toISOString(), t);
  // Random instants as PostgreSQL writes a millisecond timestamptz in UTC: the fraction's trailing zeros dropped.
  for (let i = 0; i < 2000; i++) {
    const iso = new Date(Math.floor(Math.random() * 4_102_444_800_000)).toISOString();
    const text = `${iso.slice(0, 23).replace(/\.?0+$/, '')}+00:00`;
    assert.equal(isoOf(text), iso, text);
  }
  const ms = Date.UTC(2026, 10, 27, 23, 34, 6, 643);
  assert.equal(isoOf(ms), '2026-11-27T23:34:06.643Z');
  assert.equal(isoOf(new Date(ms)), '2026-11-27T23:34:06.643Z');
  // Epoch milliseconds, the same instant twice in a row (the remembered one) and a new one after it.
  for (let i = 0; i < 2000; i++) {
    const t = Math.floor(Math.random() * 4_102_444_800_000);
    const repeat = i % 3 === 0 ? 2 : 1;
    for (let k = 0; k < repeat; k++) assert.equal(isoOf(t), new Date(t).toISOString(), String(t));
  }
  assert.equal(isoOf(Number.NaN), null);
  assert.equal(isoOf(8.64e15 + 1), null);
  assert.equal(isoOf(null), null);
  assert.equal(isoOf('not a time'), null);
});
