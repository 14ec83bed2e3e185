// Workflows: every operation on workflows (create, list, get, cancel, retry), and their coordination on the
// main thread: moving them forward when their jobs finish, and reconciling them from rows. The protocol is in
// docs/workflows.md; in short:
//
//   create     the graph validated (422), a 'workflows' slot reserved and every job admitted at once against
//              the job quotas (413, 429); graph rows written as 'creating' → every job enqueued blocked →
//              'running' → roots released. Until 'running' nothing of it can run, so a crash in between leaves
//              only blocked jobs, which reconciliation cancels (the workflow becomes 'cancelled').
//   advance    (a job of the workflow finished, or reconciliation) read the graph and its job rows, then:
//              cancel the live descendants of dead-lettered or cancelled jobs, release blocked jobs whose
//              parents all completed, and end the workflow when its jobs say so (completed | failed |
//              cancelled). Every step reads the rows first and repeats safely: a release or a cancel that
//              already happened is skipped by the queue actor.
//   neighbours a job's dependencies and dependents in its workflow (GET /jobs/:id/dependencies)
//   cancel     every live job, then the workflow (409 WORKFLOW_NOT_LIVE once completed or cancelled)
//   retry      a failed or cancelled workflow: a 'workflows' slot again, its dead-lettered and cancelled jobs
//              revived through Jobs.revive (admitted first; blocked while a parent has not completed), then
//              'running' again
//   reconcile  on the node that leads the cluster-wide tasks, when it takes the lead and every 30 s: advance every
//              running workflow; cancel 'creating' ones that no request is creating (older than CREATING_GRACE_MS).
//
// Steps for one workflow run one at a time (a chain of promises per workflow id), so a retry, a cancel and the
// advance triggered by a job's end never interleave on this node. The node that wins a conditional status
// change out of creating/running gives back the organization's 'workflows' slot.
import Type from 'typebox';
import { JobIds } from '../actors/ids.js';
import type { EnqueueInput } from '../actors/queue/queue-actor.js';
import type { DomainEvent } from '../actors/records.js';
import { doomed, graphProblems, isLive, outcome, releasable, waitsOnParents, WORKFLOW_MAX_JOBS, type WorkflowStatus } from '../actors/workflow/graph.js';
import { AppError, notFound, validationError, type FieldProblem } from '../errors.js';
import { createWorkflow } from '../io/db/sql/createWorkflow.js';
import { getWorkflow, type WorkflowJobRow, type WorkflowRow } from '../io/db/sql/getWorkflow.js';
import { jobDependencies, type Dependency } from '../io/db/sql/jobDependencies.js';
import { jobDependents } from '../io/db/sql/jobDependents.js';
import { listWorkflows } from '../io/db/sql/listWorkflows.js';
import { setWorkflowStatus } from '../io/db/sql/setWorkflowStatus.js';
import { unfinishedWorkflows } from '../io/db/sql/unfinishedWorkflows.js';
import { validator, type Valid } from '../io/validate.js';
import type { AppContext } from './context.js';
import { JsonObject, LeaseSecs, MaxRetries, Priority, QueueName, TagMap } from './fields.js';
import { expiryOf, type Jobs } from './jobs.js';
import { Periodic } from './periodic.js';

/** A 'creating' workflow older than this, that no request of this node is creating, was left by a crash. */
export const CREATING_GRACE_MS = 60_000;
/** A step that failed (a store or thread hiccup) is tried again after this long, besides reconciliation. */
const RETRY_MS = 1_000;
/** Real time between reconciliations. */
const RECONCILE_MS = 30_000;

const JobName = Type.String({ minLength: 1, maxLength: 100 });

export const CreateWorkflowBody = validator(
  Type.Object({
    name: Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' }),
    jobs: Type.Array(
      Type.Object({
        // One of the two is required; `key` is the name clients of the hosted service send.
        name: Type.Optional(JobName),
        key: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'another name for name' })),
        queue_name: QueueName,
        payload: JsonObject,
        depends_on: Type.Optional(Type.Array(JobName, { maxItems: WORKFLOW_MAX_JOBS, uniqueItems: true })),
        priority: Type.Optional(Priority),
        max_retries: Type.Optional(MaxRetries),
        timeout_seconds: Type.Optional(LeaseSecs),
        tags: Type.Optional(TagMap),
        expires_at: Type.Optional(
          Type.Union([Type.String({ maxLength: 64 }), Type.Null()], { description: 'not started by then (RFC 3339), the job is cancelled as expired' }),
        ),
      }),
      { minItems: 1, maxItems: WORKFLOW_MAX_JOBS },
    ),
  }),
);

/** A workflow with its graph and each job's progress. */
export type WorkflowGraph = WorkflowRow & { jobs: WorkflowJobRow[] };

/** Keyset of the list: (created_at to the microsecond, id). */
export type WorkflowKey = [at: string, id: string];

const FINISHED: ReadonlySet<WorkflowStatus> = new Set(['completed', 'failed', 'cancelled']);

export class Workflows {
  private readonly chains = new Map<string, Promise<unknown>>();
  /** Workflows with an advance queued and not yet started: more job ends add nothing to it. */
  private readonly queued = new Set<string>();
  /** Workflows this node is creating right now: reconciliation leaves them alone. */
  private readonly creating = new Set<string>();
  private readonly ids = new JobIds();
  private readonly reconciliation: Periodic<void>;

  constructor(
    private readonly c: AppContext,
    private readonly jobs: Jobs,
  ) {
    // Real time only, whatever the clock: tests reconcile at the moments they choose (reconcileOnce).
    this.reconciliation = new Periodic({ name: 'workflow reconciliation', intervalMs: RECONCILE_MS, run: () => this.reconcile(), log: c.log });
    c.actors.onEvents((events) => this.onEvents(events));
  }

  /** Reconciles now and every 30 s: on the node that leads the cluster-wide tasks. */
  start(): void {
    if (this.stopping) return;
    this.reconcileOnce().catch((err) => this.c.log.error('workflow reconciliation failed; the next one retries', err));
    this.reconciliation.start();
  }

  /** Another node leads now: it reconciles. */
  pause(): void {
    this.reconciliation.pause();
  }

  async stop(): Promise<void> {
    await this.reconciliation.stop();
    await this.idle();
  }

  /** Resolves when no step of any workflow is running or queued (tests wait on it after a job ends). */
  async idle(): Promise<void> {
    while (this.chains.size > 0) await Promise.all([...this.chains.values()].map((p) => p.catch(() => {})));
  }

  /** Advances every running workflow and cancels abandoned 'creating' ones, after any pass in progress. */
  reconcileOnce(): Promise<void> {
    return this.reconciliation.runOnce();
  }

  /**
   * Creates a workflow from a validated body: the graph checked (422), quotas first (the 'workflows' slot, then
   * every job at once against the job quotas), then the protocol above. Answers the workflow once it runs.
   */
  async create(org: string, body: Valid<typeof CreateWorkflowBody>): Promise<WorkflowGraph> {
    const named: FieldProblem[] = [];
    const defs = body.jobs.map(({ key, ...j }, i) => {
      if (j.name !== undefined && key !== undefined && j.name !== key) named.push({ field: `jobs.${i}.key`, message: 'must equal name when both are given' });
      if (j.name === undefined && key === undefined) named.push({ field: `jobs.${i}.name`, message: 'is required (or key)' });
      const expires_at = expiryOf(j.expires_at, null, this.c.clock.now(), named, `jobs.${i}.expires_at`);
      return { ...j, name: j.name ?? key ?? '', depends_on: j.depends_on ?? [], expires_at };
    });
    const problems = named.length > 0 ? named : graphProblems(defs);
    if (problems.length > 0) throw validationError(problems, `${problems[0]!.field} ${problems[0]!.message}`);
    const { store, quotas, clock } = this.c;
    await quotas.reserve(org, 'workflows');
    let admission;
    try {
      admission = await quotas.admitJobs(
        org,
        defs.map((d) => Buffer.byteLength(JSON.stringify(d.payload))),
      );
    } catch (err) {
      quotas.release(org, 'workflows');
      throw err;
    }
    // UUIDv7 like job ids: lists order by (created_at, id), so creation order holds within a millisecond.
    const id = this.ids.next(clock.now());
    const jobs = defs.map((d) => ({
      name: d.name,
      queue_name: d.queue_name,
      payload: d.payload,
      depends_on: d.depends_on,
      priority: d.priority ?? 0,
      max_retries: d.max_retries ?? null,
      timeout_seconds: d.timeout_seconds ?? null,
      tags: d.tags ?? {},
      expires_at: d.expires_at,
      job_id: this.ids.next(clock.now()),
    }));
    this.creating.add(id);
    try {
      try {
        await createWorkflow(store, { id, organizationId: org, name: body.name, at: new Date(clock.now()), jobs });
      } catch (err) {
        quotas.releaseJobs(org, admission, defs.length);
        quotas.release(org, 'workflows');
        throw err;
      }
      // Each job through the one path of job creation, which gives back the admission of a job not created.
      const outcomes = await Promise.allSettled(
        jobs.map((j) => {
          const input: EnqueueInput = {
            payload: j.payload,
            priority: j.priority,
            max_retries: j.max_retries,
            timeout_seconds: j.timeout_seconds,
            scheduled_at: null,
            idempotency_key: null,
            tags: j.tags,
            completion_webhook: null,
            completion_webhook_secret: null,
            id: j.job_id,
            workflow_id: id,
            blocked: true,
            expires_at: j.expires_at,
          };
          return this.jobs.enqueueAdmitted(org, j.queue_name, input, admission);
        }),
      );
      const failure = outcomes.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failure) {
        await this.exclusive(id, () => this.abort(org, id)).catch((err) =>
          this.c.log.error(`workflow ${id}: aborting a failed creation failed; reconciliation retries`, err),
        );
        throw failure.reason;
      }
      await setWorkflowStatus(store, org, id, 'running', ['creating'], new Date(clock.now()));
    } finally {
      this.creating.delete(id);
    }
    // The roots are released here; if that fails the workflow is running and reconciliation releases them.
    await this.exclusive(id, () => this.advance(org, id)).catch((err) => this.retryLater(org, id, err));
    return this.get(org, id);
  }

  /** A page of workflows (without their jobs), newest first; one row more than `limit` says there is a next page. */
  list(
    org: string,
    filter: { status: WorkflowStatus | null },
    after: WorkflowKey | null,
    limit: number,
  ): Promise<Array<WorkflowRow & { cursor_at: string; job_count: number }>> {
    return listWorkflows(this.c.store, org, filter, after, limit);
  }

  async get(org: string, id: string): Promise<WorkflowGraph> {
    const g = await getWorkflow(this.c.store, org, id);
    if (!g) throw notFound('Workflow');
    return g;
  }

  /**
   * A job's place in its workflow: the jobs it waits for and the jobs that wait for it, with their states (both
   * empty for a job outside any workflow). 404 for a job the organization does not have.
   */
  async neighbours(org: string, jobId: string): Promise<{ workflow_id: string | null; dependencies: Dependency[]; dependents: Dependency[] }> {
    const job = await this.jobs.get(org, jobId);
    const workflowId = (job.workflow_id as string | null) ?? null;
    if (workflowId === null) return { workflow_id: null, dependencies: [], dependents: [] };
    const [dependencies, dependents] = await Promise.all([
      jobDependencies(this.c.store, org, jobId),
      jobDependents(this.c.store, org, jobId),
    ]);
    return { workflow_id: workflowId, dependencies, dependents };
  }

  /** Cancels every live job, then the workflow (409 once it is completed or cancelled); answers it as it now is. */
  async cancel(org: string, id: string): Promise<WorkflowGraph> {
    await this.exclusive(id, async () => {
      const g = await this.get(org, id);
      if (g.status === 'completed' || g.status === 'cancelled' || g.status === 'creating') {
        throw new AppError('WORKFLOW_NOT_LIVE', `The workflow is ${g.status}; it cannot be cancelled`, { workflow_status: g.status });
      }
      await this.cancelJobs(org, g.jobs.filter((j) => isLive(j.status)));
      await this.finish(org, g, 'cancelled');
    });
    return this.get(org, id);
  }

  /**
   * Retries a failed or cancelled workflow: its dead-lettered and cancelled jobs come back (each a job
   * creation: quota checked first), blocked when a parent has not completed, and the workflow runs again.
   * Answers it as it now is.
   */
  async retry(org: string, id: string): Promise<WorkflowGraph> {
    await this.exclusive(id, async () => {
      const { quotas, store, clock } = this.c;
      const g = await this.get(org, id);
      if (g.status !== 'failed' && g.status !== 'cancelled') {
        throw new AppError('WORKFLOW_NOT_LIVE', `The workflow is ${g.status}; only failed or cancelled workflows can be retried`, {
          workflow_status: g.status,
        });
      }
      const revive = g.jobs
        .filter((j) => j.status === 'deadletter' || j.status === 'cancelled')
        .map((j) => ({
          id: j.job_id,
          queue_name: j.queue_name,
          priority: j.priority,
          max_retries: j.max_retries,
          timeout_seconds: j.timeout_seconds,
          last_error: j.last_error,
          idempotency_key: j.idempotency_key,
          workflow_id: id,
          blocked: waitsOnParents(j, g.jobs),
          // Workflow jobs are created without completion callbacks.
          callback: false,
        }));
      await quotas.reserve(org, 'workflows');
      let running = false;
      // Once the jobs are admitted, the workflow runs again before any of them comes back: a retry or a cancel
      // racing on another node wins or loses the status change as a whole.
      const runAgain = async () => {
        if (!(await setWorkflowStatus(store, org, id, 'running', [g.status], new Date(clock.now())))) {
          throw new AppError('WORKFLOW_NOT_LIVE', 'The workflow changed meanwhile; read it again');
        }
        running = true;
      };
      try {
        await this.jobs.revive(org, revive, ['deadletter', 'cancelled'], runAgain);
      } catch (err) {
        if (!running) {
          quotas.release(org, 'workflows');
          throw err;
        }
        await this.advance(org, id);
        throw err;
      }
      // Whatever did not come back ends the workflow again at this advance, and the slot with it.
      await this.advance(org, id);
    });
    return this.get(org, id);
  }

  // --- coordination ---

  private get stopping(): boolean {
    return this.reconciliation.stopping;
  }

  private async reconcile(): Promise<void> {
    const rows = await unfinishedWorkflows(this.c.store);
    const now = this.c.clock.now();
    for (const w of rows) {
      if (this.stopping) return;
      if (w.status === 'running') {
        await this.exclusive(w.id, () => this.advance(w.organization_id, w.id)).catch((err) =>
          this.c.log.error(`workflow ${w.id}: reconciliation failed; the next one retries`, err),
        );
      } else if (!this.creating.has(w.id) && now - new Date(w.created_at).getTime() >= CREATING_GRACE_MS) {
        await this.exclusive(w.id, () => this.abort(w.organization_id, w.id)).catch((err) =>
          this.c.log.error(`workflow ${w.id}: cancelling an abandoned creation failed; the next one retries`, err),
        );
      }
    }
  }

  private onEvents(events: DomainEvent[]): void {
    for (const e of events) if (e.type === 'job.finished' && e.workflow_id !== undefined) this.kick(e.organization_id, e.workflow_id);
  }

  /** Queues one advance of the workflow (coalesced with one already queued). */
  private kick(org: string, id: string): void {
    if (this.stopping || this.queued.has(id)) return;
    this.queued.add(id);
    this.exclusive(id, () => {
      this.queued.delete(id);
      return this.advance(org, id);
    }).catch((err) => this.retryLater(org, id, err));
  }

  private retryLater(org: string, id: string, err: unknown): void {
    this.c.log.warn(`workflow ${id}: a step failed; retrying in ${RETRY_MS} ms`, err);
    if (!this.stopping) setTimeout(() => this.kick(org, id), RETRY_MS).unref();
  }

  /** Runs fn after every step of this workflow queued before it. */
  private exclusive<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const run = (this.chains.get(id) ?? Promise.resolve()).catch(() => {}).then(fn);
    const tail = run.catch(() => {});
    this.chains.set(id, tail);
    void tail.then(() => {
      if (this.chains.get(id) === tail) this.chains.delete(id);
    });
    return run;
  }

  /** See the header. Reads the rows, acts, and repeats nothing that already happened. */
  private async advance(org: string, id: string): Promise<void> {
    const g = await getWorkflow(this.c.store, org, id);
    if (!g || g.status === 'creating') return;
    const cancelled = await this.cancelJobs(org, doomed(g.jobs));
    for (const j of g.jobs) if (cancelled.has(j.job_id)) j.status = 'cancelled';
    const ready = releasable(g.jobs);
    const byQueue = new Map<string, string[]>();
    for (const j of ready) byQueue.set(j.queue_name, [...(byQueue.get(j.queue_name) ?? []), j.job_id]);
    await Promise.all([...byQueue].map(([queue, ids]) => this.c.actors.ask(org, queue, 'release', { ids })));
    const status = outcome(g.jobs);
    if (g.status === 'running' && status !== 'running') await this.finish(org, g, status);
  }

  /** Cancels jobs through their actors; returns the ids that were live and are now cancelled. */
  private async cancelJobs(org: string, jobs: WorkflowJobRow[]): Promise<Set<string>> {
    const done = new Set<string>();
    await Promise.all(
      jobs.map(async (j) => {
        const r = await this.c.actors.ask(org, j.queue_name, 'cancel', { id: j.job_id });
        if (r) done.add(j.job_id);
      }),
    );
    return done;
  }

  /** A creation that cannot complete: its jobs are cancelled (none of them ever ran), then the workflow. */
  private async abort(org: string, id: string): Promise<void> {
    const g = await getWorkflow(this.c.store, org, id);
    if (!g || g.status !== 'creating') return;
    await this.cancelJobs(org, g.jobs.filter((j) => isLive(j.status)));
    await this.finish(org, g, 'cancelled');
  }

  /** The end of a workflow: a conditional transition; the winner gives back the slot and tells listeners. */
  private async finish(org: string, g: WorkflowGraph, to: 'completed' | 'failed' | 'cancelled'): Promise<void> {
    const { store, clock, quotas, events } = this.c;
    const at = clock.now();
    const from: WorkflowStatus[] = FINISHED.has(g.status) ? [g.status] : ['creating', 'running'];
    if (!(await setWorkflowStatus(store, org, g.id, to, from, new Date(at)))) return;
    if (!FINISHED.has(g.status)) quotas.release(org, 'workflows');
    events.publish(org, `workflow.${to}`, { workflow_id: g.id, name: g.name, status: to }, at);
  }
}
