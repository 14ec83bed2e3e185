// Workflow coordination, on the main thread: creates workflows across queue actors, moves them forward when
// their jobs finish, and reconciles them from rows. The protocol is in docs/workflows.md; in short:
//
//   create     graph rows written as 'creating' → every job enqueued blocked → 'running' → roots released.
//              Until 'running' nothing of it can run, so a crash in between leaves only blocked jobs, which
//              reconciliation cancels (the workflow becomes 'cancelled').
//   advance    (a job of the workflow finished, or reconciliation) read the graph and its job rows, then:
//              cancel the live descendants of dead-lettered or cancelled jobs, release blocked jobs whose
//              parents all completed, and end the workflow when its jobs say so (completed | failed |
//              cancelled). Every step reads the rows first and repeats safely: a release or a cancel that
//              already happened is skipped by the queue actor.
//   reconcile  at start and every `intervalMs`: advance every running workflow; cancel 'creating' ones that
//              no request of this node is creating and that are older than CREATING_GRACE_MS.
//
// Steps for one workflow run one at a time (a chain of promises per workflow id), so a retry, a cancel and the
// advance triggered by a job's end never interleave on this node. The node that wins a conditional status
// change out of creating/running gives back the organization's 'workflows' slot.
import { JobIds } from '../actors/ids.js';
import type { EnqueueInput, ReviveInput } from '../actors/queue/queue-actor.js';
import type { DomainEvent } from '../actors/records.js';
import { doomed, isLive, outcome, releasable, waitsOnParents, type WorkflowStatus } from '../actors/workflow/graph.js';
import type { Clock } from '../clock.js';
import { AppError, notFound } from '../errors.js';
import { createWorkflow } from '../io/db/sql/createWorkflow.js';
import { getWorkflow, type WorkflowJobRow, type WorkflowRow } from '../io/db/sql/getWorkflow.js';
import { unfinishedWorkflows } from '../io/db/sql/listWorkflows.js';
import { setWorkflowStatus } from '../io/db/sql/setWorkflowStatus.js';
import type { Store } from '../io/db/store.js';
import type { Log } from '../log.js';
import type { ActorPool } from './actor-pool.js';
import type { EventBus } from '../app/events.js';
import type { JobPlaces } from './job-places.js';
import type { Quotas } from '../app/quotas.js';

/** A 'creating' workflow older than this, that no request of this node is creating, was left by a crash. */
export const CREATING_GRACE_MS = 60_000;
/** A step that failed (a store or thread hiccup) is tried again after this long, besides reconciliation. */
const RETRY_MS = 1_000;

export interface WorkflowJobDefinition {
  name: string;
  queue_name: string;
  payload: Record<string, unknown>;
  depends_on: string[];
  priority: number;
  max_retries: number | null;
  timeout_seconds: number | null;
  tags: Record<string, string>;
}

export interface WorkflowsOptions {
  pool: ActorPool;
  store: Store;
  quotas: Quotas;
  events: EventBus;
  places: JobPlaces;
  clock: Clock;
  log: Log;
  /** Real time between reconciliations. */
  intervalMs?: number;
}

type Graph = WorkflowRow & { jobs: WorkflowJobRow[] };

const FINISHED: ReadonlySet<WorkflowStatus> = new Set(['completed', 'failed', 'cancelled']);

export class WorkflowCoordinator {
  private readonly chains = new Map<string, Promise<unknown>>();
  /** Workflows with an advance queued and not yet started: more job ends add nothing to it. */
  private readonly queued = new Set<string>();
  /** Workflows this node is creating right now: reconciliation leaves them alone. */
  private readonly creating = new Set<string>();
  private readonly ids = new JobIds();
  private timer: NodeJS.Timeout | null = null;
  private stopping = false;

  constructor(private readonly o: WorkflowsOptions) {
    o.pool.onEvents((events) => this.onEvents(events));
  }

  start(): void {
    if (this.timer || this.stopping) return;
    this.reconcileOnce().catch((err) => this.o.log.error('workflow reconciliation failed; the next one retries', err));
    this.timer = setInterval(() => {
      this.reconcileOnce().catch((err) => this.o.log.error('workflow reconciliation failed; the next one retries', err));
    }, this.o.intervalMs ?? 30_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.idle();
  }

  /** Resolves when no step of any workflow is running or queued (tests wait on it after a job ends). */
  async idle(): Promise<void> {
    while (this.chains.size > 0) await Promise.all([...this.chains.values()].map((p) => p.catch(() => {})));
  }

  /**
   * Creates a workflow whose graph was validated: quotas first (the 'workflows' slot, then every job at once
   * against the job quotas), then the protocol above. Returns its id once it runs.
   */
  async create(organizationId: string, name: string, defs: WorkflowJobDefinition[]): Promise<string> {
    const { pool, store, quotas, clock } = this.o;
    await quotas.reserve(organizationId, 'workflows');
    let admission;
    try {
      admission = await quotas.admitJobs(
        organizationId,
        defs.map((d) => Buffer.byteLength(JSON.stringify(d.payload))),
      );
    } catch (err) {
      quotas.release(organizationId, 'workflows');
      throw err;
    }
    // UUIDv7 like job ids: lists order by (created_at, id), so creation order holds within a millisecond.
    const id = this.ids.next(clock.now());
    const jobs = defs.map((d) => ({ ...d, job_id: this.ids.next(clock.now()) }));
    this.creating.add(id);
    try {
      try {
        await createWorkflow(store, { id, organizationId, name, at: new Date(clock.now()), jobs });
      } catch (err) {
        quotas.releaseJobs(organizationId, admission, defs.length);
        quotas.release(organizationId, 'workflows');
        throw err;
      }
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
          };
          return pool.ask(organizationId, j.queue_name, 'enqueue', input);
        }),
      );
      const created = outcomes.filter((r) => r.status === 'fulfilled' && r.value.created).length;
      quotas.releaseJobs(organizationId, admission, defs.length - created);
      jobs.forEach((j, i) => {
        if (outcomes[i]!.status === 'fulfilled') this.o.places.remember(organizationId, j.job_id, j.queue_name);
      });
      const failure = outcomes.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failure) {
        await this.exclusive(id, () => this.abort(organizationId, id)).catch((err) =>
          this.o.log.error(`workflow ${id}: aborting a failed creation failed; reconciliation retries`, err),
        );
        throw failure.reason;
      }
      await setWorkflowStatus(store, organizationId, id, 'running', ['creating'], new Date(clock.now()));
    } finally {
      this.creating.delete(id);
    }
    // The roots are released here; if that fails the workflow is running and reconciliation releases them.
    await this.exclusive(id, () => this.advance(organizationId, id)).catch((err) => this.retryLater(organizationId, id, err));
    return id;
  }

  /** Cancels every live job, then the workflow (409 once it is completed or cancelled). */
  cancel(organizationId: string, id: string): Promise<void> {
    return this.exclusive(id, async () => {
      const g = await this.graph(organizationId, id);
      if (g.status === 'completed' || g.status === 'cancelled' || g.status === 'creating') {
        throw new AppError('WORKFLOW_NOT_LIVE', `The workflow is ${g.status}; it cannot be cancelled`, { workflow_status: g.status });
      }
      await this.cancelJobs(organizationId, g.jobs.filter((j) => isLive(j.status)));
      await this.finish(organizationId, g, 'cancelled');
    });
  }

  /**
   * Retries a failed or cancelled workflow: its dead-lettered and cancelled jobs come back (each a job
   * creation: quota checked first), blocked when a parent has not completed, and the workflow runs again.
   */
  retry(organizationId: string, id: string): Promise<void> {
    return this.exclusive(id, async () => {
      const { quotas, store, clock, pool } = this.o;
      const g = await this.graph(organizationId, id);
      if (g.status !== 'failed' && g.status !== 'cancelled') {
        throw new AppError('WORKFLOW_NOT_LIVE', `The workflow is ${g.status}; only failed or cancelled workflows can be retried`, {
          workflow_status: g.status,
        });
      }
      const revive = g.jobs.filter((j) => j.status === 'deadletter' || j.status === 'cancelled');
      await quotas.reserve(organizationId, 'workflows');
      let admission;
      try {
        admission = await quotas.admitJobs(organizationId, revive.map(() => 0));
      } catch (err) {
        quotas.release(organizationId, 'workflows');
        throw err;
      }
      if (!(await setWorkflowStatus(store, organizationId, id, 'running', [g.status], new Date(clock.now())))) {
        quotas.releaseJobs(organizationId, admission, revive.length);
        quotas.release(organizationId, 'workflows');
        throw new AppError('WORKFLOW_NOT_LIVE', 'The workflow changed meanwhile; read it again');
      }
      const byQueue = new Map<string, ReviveInput[]>();
      for (const j of revive) {
        const input: ReviveInput = {
          id: j.job_id,
          priority: j.priority,
          max_retries: j.max_retries,
          timeout_seconds: j.timeout_seconds,
          last_error: j.last_error,
          idempotency_key: j.idempotency_key,
          workflow_id: id,
          blocked: waitsOnParents(j, g.jobs),
          // Workflow jobs are created without completion callbacks.
          callback: false,
        };
        byQueue.set(j.queue_name, [...(byQueue.get(j.queue_name) ?? []), input]);
      }
      let revived = 0;
      const results = await Promise.allSettled(
        [...byQueue].map(async ([queue, inputs]) => {
          const outcomes = await pool.ask(organizationId, queue, 'revive', { jobs: inputs, from: ['deadletter', 'cancelled'] });
          for (const o of outcomes) {
            if (!o.revived) continue;
            revived++;
            this.o.places.remember(organizationId, o.id, queue);
          }
        }),
      );
      quotas.releaseJobs(organizationId, admission, revive.length - revived);
      // Whatever did not come back ends the workflow again at this advance, and the slot with it.
      await this.advance(organizationId, id);
      const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failure) throw failure.reason;
    });
  }

  /** Advances every running workflow and cancels abandoned 'creating' ones. */
  async reconcileOnce(): Promise<void> {
    const rows = await unfinishedWorkflows(this.o.store);
    const now = this.o.clock.now();
    for (const w of rows) {
      if (this.stopping) return;
      if (w.status === 'running') {
        await this.exclusive(w.id, () => this.advance(w.organization_id, w.id)).catch((err) =>
          this.o.log.error(`workflow ${w.id}: reconciliation failed; the next one retries`, err),
        );
      } else if (!this.creating.has(w.id) && now - new Date(w.created_at).getTime() >= CREATING_GRACE_MS) {
        await this.exclusive(w.id, () => this.abort(w.organization_id, w.id)).catch((err) =>
          this.o.log.error(`workflow ${w.id}: cancelling an abandoned creation failed; the next one retries`, err),
        );
      }
    }
  }

  // --- internals ---

  private onEvents(events: DomainEvent[]): void {
    for (const e of events) if (e.type === 'job.finished' && e.workflow_id !== undefined) this.kick(e.organization_id, e.workflow_id);
  }

  /** Queues one advance of the workflow (coalesced with one already queued). */
  private kick(organizationId: string, id: string): void {
    if (this.stopping || this.queued.has(id)) return;
    this.queued.add(id);
    this.exclusive(id, () => {
      this.queued.delete(id);
      return this.advance(organizationId, id);
    }).catch((err) => this.retryLater(organizationId, id, err));
  }

  private retryLater(organizationId: string, id: string, err: unknown): void {
    this.o.log.warn(`workflow ${id}: a step failed; retrying in ${RETRY_MS} ms`, err);
    if (!this.stopping) setTimeout(() => this.kick(organizationId, id), RETRY_MS).unref();
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

  private async graph(organizationId: string, id: string): Promise<Graph> {
    const g = await getWorkflow(this.o.store, organizationId, id);
    if (!g) throw notFound('Workflow');
    return g;
  }

  /** See the header. Reads the rows, acts, and repeats nothing that already happened. */
  private async advance(organizationId: string, id: string): Promise<void> {
    const g = await getWorkflow(this.o.store, organizationId, id);
    if (!g || g.status === 'creating') return;
    const cancelled = await this.cancelJobs(organizationId, doomed(g.jobs));
    for (const j of g.jobs) if (cancelled.has(j.job_id)) j.status = 'cancelled';
    const ready = releasable(g.jobs);
    const byQueue = new Map<string, string[]>();
    for (const j of ready) byQueue.set(j.queue_name, [...(byQueue.get(j.queue_name) ?? []), j.job_id]);
    await Promise.all(
      [...byQueue].map(([queue, ids]) => this.o.pool.ask(organizationId, queue, 'release', { ids })),
    );
    const status = outcome(g.jobs);
    if (g.status === 'running' && status !== 'running') await this.finish(organizationId, g, status);
  }

  /** Cancels jobs through their actors; returns the ids that were live and are now cancelled. */
  private async cancelJobs(organizationId: string, jobs: WorkflowJobRow[]): Promise<Set<string>> {
    const done = new Set<string>();
    await Promise.all(
      jobs.map(async (j) => {
        const r = await this.o.pool.ask(organizationId, j.queue_name, 'cancel', { id: j.job_id });
        if (r) done.add(j.job_id);
      }),
    );
    return done;
  }

  /** A creation that cannot complete: its jobs are cancelled (none of them ever ran), then the workflow. */
  private async abort(organizationId: string, id: string): Promise<void> {
    const g = await getWorkflow(this.o.store, organizationId, id);
    if (!g || g.status !== 'creating') return;
    await this.cancelJobs(organizationId, g.jobs.filter((j) => isLive(j.status)));
    await this.finish(organizationId, g, 'cancelled');
  }

  /** The end of a workflow: a conditional transition; the winner gives back the slot and tells listeners. */
  private async finish(organizationId: string, g: Graph, to: 'completed' | 'failed' | 'cancelled'): Promise<void> {
    const { store, clock, quotas, events } = this.o;
    const at = clock.now();
    const from: WorkflowStatus[] = FINISHED.has(g.status) ? [g.status] : ['creating', 'running'];
    if (!(await setWorkflowStatus(store, organizationId, g.id, to, from, new Date(at)))) return;
    if (!FINISHED.has(g.status)) quotas.release(organizationId, 'workflows');
    events.publish(organizationId, `workflow.${to}`, { workflow_id: g.id, name: g.name, status: to }, at);
  }
}
