// Timestamps leave as ISO 8601 UTC whatever shape they come in: the text row_to_json writes (cut, not parsed, when it
// is UTC with microseconds), a Date, epoch milliseconds. The cut must agree with a parse for every shape it accepts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isoOf } from '../src/io/present.js';

test('isoOf agrees with Date parsing for every shape of row_to_json text, Dates and epoch milliseconds', () => {
  const texts = [
    '2026-11-27T23:34:06.643123+00:00',
    '2026-01-01T00:00:00.000001+00:00',
    '2026-11-27T23:34:06.999999+00:00',
    '1999-12-31T23:59:59.123456+00:00',
    // PostgreSQL drops trailing zeros of the fraction, and writes the session's zone.
    '2026-11-27T23:34:06.64+00:00',
    '2026-11-27T23:34:06+00:00',
    '2026-11-27T23:34:06.643123+01:00',
    '2026-11-27T23:34:06.643123-05:30',
  ];
  for (const t of texts) assert.equal(isoOf(t), new Date(t).toISOString(), t);
  const ms = Date.UTC(2026, 10, 27, 23, 34, 6, 643);
  assert.equal(isoOf(ms), '2026-11-27T23:34:06.643Z');
  assert.equal(isoOf(new Date(ms)), '2026-11-27T23:34:06.643Z');
  assert.equal(isoOf(null), null);
  assert.equal(isoOf('not a time'), null);
});
