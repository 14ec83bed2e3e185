// A workflow's dependency graph: validation of a submitted graph, and the questions the coordinator asks of
// it (whose parents all completed, which jobs descend from a failed one, what the workflow's status is).
// Pure: jobs are named by their workflow names, statuses come from the caller.
import type { FieldProblem } from '../../errors.js';
import type { JobStatus } from '../records.js';

/** At most this many jobs in one workflow: one request admits them together, like a bulk enqueue. */
export const WORKFLOW_MAX_JOBS = 100;

export type WorkflowStatus = 'creating' | 'running' | 'completed' | 'failed' | 'cancelled';

export interface GraphNode {
  name: string;
  depends_on: string[];
}

/**
 * What makes a graph unusable, one problem per field: duplicate names, a dependency on itself or on a name
 * that is not in the workflow, and cycles (one reported, as the path that closes it).
 */
export function graphProblems(jobs: readonly GraphNode[]): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const first = new Map<string, number>();
  jobs.forEach((j, i) => {
    if (first.has(j.name)) problems.push({ field: `jobs.${i}.name`, message: `'${j.name}' is already the name of jobs.${first.get(j.name)}` });
    else first.set(j.name, i);
  });
  jobs.forEach((j, i) => {
    for (const d of j.depends_on) {
      if (d === j.name) problems.push({ field: `jobs.${i}.depends_on`, message: 'a job cannot depend on itself' });
      else if (!first.has(d)) problems.push({ field: `jobs.${i}.depends_on`, message: `'${d}' is not the name of a job of this workflow` });
    }
  });
  if (problems.length > 0) return problems;
  const cycle = findCycle(jobs);
  if (cycle) problems.push({ field: 'jobs', message: `the dependencies form a cycle: ${cycle.join(' → ')}` });
  return problems;
}

/** A cycle as a path of names ending where it starts, or null. Iterative DFS: 100 jobs, no recursion limits. */
function findCycle(jobs: readonly GraphNode[]): string[] | null {
  const parents = new Map(jobs.map((j) => [j.name, j.depends_on]));
  const state = new Map<string, 'open' | 'done'>();
  for (const start of parents.keys()) {
    if (state.has(start)) continue;
    const path: string[] = [];
    const stack: Array<{ name: string; next: number }> = [{ name: start, next: 0 }];
    state.set(start, 'open');
    path.push(start);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const deps = parents.get(top.name)!;
      if (top.next >= deps.length) {
        state.set(top.name, 'done');
        stack.pop();
        path.pop();
        continue;
      }
      const d = deps[top.next++]!;
      const s = state.get(d);
      if (s === 'open') return [...path.slice(path.indexOf(d)), d].reverse();
      if (s === undefined) {
        state.set(d, 'open');
        path.push(d);
        stack.push({ name: d, next: 0 });
      }
    }
  }
  return null;
}

/** A job of a running graph as the coordinator reads it; status null: the row is gone (retention). */
export interface GraphJob extends GraphNode {
  status: JobStatus | null;
  dependencies_met: boolean | null;
}

const LIVE: ReadonlySet<JobStatus | null> = new Set(['pending', 'scheduled', 'processing']);
export const isLive = (s: JobStatus | null): boolean => LIVE.has(s);
/** Retention deletes only completed and cancelled rows, long after the end: a missing parent has finished. */
const done = (s: JobStatus | null): boolean => s === 'completed' || s === null;
const failed = (s: JobStatus | null): boolean => s === 'deadletter' || s === 'cancelled';

/** Blocked jobs whose parents have all completed: the ones to release. */
export function releasable<J extends GraphJob>(jobs: readonly J[]): J[] {
  const byName = new Map(jobs.map((j) => [j.name, j]));
  return jobs.filter(
    (j) => j.status === 'pending' && j.dependencies_met === false && j.depends_on.every((d) => done(byName.get(d)?.status ?? null)),
  );
}

/** True when some parent of this job has not completed (a revived job must come back blocked). */
export function waitsOnParents(job: GraphNode, jobs: readonly GraphJob[]): boolean {
  const byName = new Map(jobs.map((j) => [j.name, j]));
  return job.depends_on.some((d) => !done(byName.get(d)?.status ?? null));
}

/** Live jobs downstream of a dead-lettered or cancelled job: they are cancelled instead of running. */
export function doomed<J extends GraphJob>(jobs: readonly J[]): J[] {
  const children = new Map<string, string[]>();
  for (const j of jobs) for (const d of j.depends_on) children.set(d, [...(children.get(d) ?? []), j.name]);
  const seen = new Set<string>();
  const stack = jobs.filter((j) => failed(j.status)).map((j) => j.name);
  while (stack.length > 0) {
    for (const c of children.get(stack.pop()!) ?? []) {
      if (seen.has(c)) continue;
      seen.add(c);
      stack.push(c);
    }
  }
  return jobs.filter((j) => seen.has(j.name) && isLive(j.status));
}

/**
 * The status the jobs give a workflow that has started: completed when every job completed; failed when one
 * was dead-lettered; cancelled when one was cancelled (by a user: the coordinator only cancels downstream of
 * a failure); running otherwise. Independent branches keep running after a failure.
 */
export function outcome(jobs: readonly GraphJob[]): Exclude<WorkflowStatus, 'creating'> {
  if (jobs.every((j) => done(j.status))) return 'completed';
  if (jobs.some((j) => j.status === 'deadletter')) return 'failed';
  if (jobs.some((j) => j.status === 'cancelled')) return 'cancelled';
  return 'running';
}
