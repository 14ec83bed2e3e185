// The workflow graph alone (pure): validation problems, which jobs a coordinator releases or cancels, and the
// status the jobs give the workflow.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { doomed, graphProblems, outcome, releasable, waitsOnParents, type GraphJob } from '../src/actors/workflow/graph.js';
import type { JobStatus } from '../src/actors/records.js';

const node = (name: string, ...depends_on: string[]) => ({ name, depends_on });
const job = (name: string, status: JobStatus | null, depends_on: string[] = [], dependencies_met = true): GraphJob => ({
  name,
  depends_on,
  status,
  dependencies_met,
});

describe('workflow graph', () => {
  test('a valid diamond has no problems', () => {
    assert.deepEqual(graphProblems([node('a'), node('b', 'a'), node('c', 'a'), node('d', 'b', 'c')]), []);
  });

  test('duplicates, self and unknown dependencies are named per field', () => {
    assert.deepEqual(graphProblems([node('a'), node('a'), node('b', 'b', 'x')]), [
      { field: 'jobs.1.name', message: "'a' is already the name of jobs.0" },
      { field: 'jobs.2.depends_on', message: 'a job cannot depend on itself' },
      { field: 'jobs.2.depends_on', message: "'x' is not the name of a job of this workflow" },
    ]);
  });

  test('a cycle is reported as the path that closes it', () => {
    const [p] = graphProblems([node('root'), node('a', 'root', 'c'), node('b', 'a'), node('c', 'b')]);
    assert.equal(p?.field, 'jobs');
    assert.match(p!.message, /cycle: (a|b|c) → (a|b|c) → (a|b|c) → \1$/);
    assert.deepEqual(graphProblems(Array.from({ length: 100 }, (_, i) => (i === 0 ? node('j0') : node(`j${i}`, `j${i - 1}`)))), []);
  });

  test('released: blocked jobs whose parents all completed (a missing row counts as completed)', () => {
    const jobs = [job('a', 'completed'), job('b', null), job('c', 'processing'), job('d', 'pending', ['a', 'b'], false), job('e', 'pending', ['a', 'c'], false)];
    assert.deepEqual(releasable(jobs).map((j) => j.name), ['d']);
    assert.equal(waitsOnParents(jobs[4]!, jobs), true);
    assert.equal(waitsOnParents(jobs[3]!, jobs), false);
  });

  test('doomed: the live descendants of a dead-lettered or cancelled job, transitively', () => {
    const jobs = [
      job('a', 'deadletter'),
      job('b', 'pending', ['a'], false),
      job('c', 'pending', ['b'], false),
      job('d', 'cancelled', ['a']),
      job('x', 'processing'),
      job('y', 'pending', ['x'], false),
    ];
    assert.deepEqual(doomed(jobs).map((j) => j.name), ['b', 'c']);
  });

  test('outcome: completed, failed, cancelled, running', () => {
    assert.equal(outcome([job('a', 'completed'), job('b', null)]), 'completed');
    assert.equal(outcome([job('a', 'deadletter'), job('b', 'cancelled'), job('c', 'processing')]), 'failed');
    assert.equal(outcome([job('a', 'cancelled'), job('b', 'completed')]), 'cancelled');
    assert.equal(outcome([job('a', 'completed'), job('b', 'pending')]), 'running');
  });
});
