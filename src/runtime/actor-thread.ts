// An actor thread: hosts the QueueActors of its shards, runs their messages one at a time, keeps their
// timers, and commits their journal. Messages and replies cross the thread boundary in arrays, one post
// per event-loop turn (batching measured ~3x the throughput of one message per post).
//
// An actor is rebuilt from the store on first use (messages wait in order while it loads) and at boot for
// every queue with live jobs. When a commit fails, the actors it touched are dropped: the next message
// rebuilds them from what the store really holds.
import { parentPort, workerData } from 'node:worker_threads';
import { ManualClock, systemClock, type Clock } from '../clock.js';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { Heap } from '../actors/heap.js';
import { JobIds } from '../actors/ids.js';
import { QueueActor, type ClaimReply, type Waiter } from '../actors/queue/queue-actor.js';
import { OrgActor } from '../actors/org/org-actor.js';
import type { DomainEvent, Effects, JournalRecord, Reply } from '../actors/records.js';
import { PgStore } from '../io/db/pg.js';
import { RemoteStore } from '../io/db/remote.js';
import type { Store, StoreLink } from '../io/db/store.js';
import { commitBatch } from '../io/db/sql/commitBatch.js';
import { liveQueues } from '../io/db/sql/liveQueues.js';
import { loadOrganization } from '../io/db/sql/loadOrganization.js';
import { loadQueue } from '../io/db/sql/loadQueue.js';
import { isDataFault } from '../io/db/faults.js';
import { Journal, type Token } from './journal.js';
import { ORG_ACTOR, type Ask, type CommitStats, type ThreadIn, type ThreadOut } from './protocol.js';
import { actorKey, shardOf } from './shard.js';

export interface ThreadInit {
  index: number;
  threads: number;
  config: Config;
  store: StoreLink;
  clock: SharedArrayBuffer | null;
}

const init = workerData as ThreadInit;
const port = parentPort!;
const clock: Clock = init.clock ? new ManualClock(init.clock) : systemClock;
const store: Store =
  init.store.kind === 'pg' ? new PgStore(init.store.url, init.config.pgPoolSize) : new RemoteStore(init.store.port);
const settings = {
  retryUnitMs: init.config.retryUnitMs,
  defaultMaxRetries: init.config.defaultMaxRetries,
  defaultTimeoutSeconds: init.config.defaultTimeoutSeconds,
};

// --- replies, batched per turn ---
let outbox: ThreadOut[] = [];
function send(msg: ThreadOut): void {
  if (outbox.length === 0) setImmediate(flushOutbox);
  outbox.push(msg);
}
function flushOutbox(): void {
  const batch = outbox;
  outbox = [];
  try {
    port.postMessage(batch);
    return;
  } catch {
    // One reply cannot be copied (a row stored before the edge refused deep values): post one by one, below.
  }
  for (const m of batch) {
    try {
      port.postMessage([m]);
    } catch (err) {
      console.error(`[actor-thread ${init.index}] a message could not be posted:`, (err as Error).message);
      if (m.id > 0) port.postMessage([{ id: m.id, ok: false, error: new AppError('INTERNAL', 'The reply could not be encoded').toWire() }]);
    }
  }
}
// A tell (id 0) has nobody waiting for its answer.
const ok = (id: number, value: unknown) => {
  if (id !== 0) send({ id, ok: true, value });
};
const fail = (id: number, err: unknown) => {
  // Unexpected errors are logged here and leave as the catalog's generic 500: no SQL or stack text for clients.
  const e = err instanceof AppError ? err : new AppError('INTERNAL');
  if (!(err instanceof AppError)) console.error(`[actor-thread ${init.index}]`, err);
  if (id !== 0) send({ id, ok: false, error: e.toWire() });
};

// --- actors: a QueueActor per (organization, queue), an OrgActor per organization (queue key ORG_ACTOR) ---
type Actor = QueueActor | OrgActor;
type Slot = { actor: Actor } | { loading: Ask[] };
const actors = new Map<string, Slot>();
let currentKey = '';
/** The request being handled: its records, events and reply share it, so a commit can fail it alone. */
let currentToken: Token = 0;
let lastToken: Token = 0;
const ids = new JobIds();
const fx: Effects = {
  get now() {
    return clock.now();
  },
  write: (rec: JournalRecord) => journal.write(currentKey, rec, currentToken),
  emit: (event: DomainEvent) => journal.emit(event, currentToken),
  newJobId: () => ids.next(clock.now()),
};

/**
 * Actors dropped while writes made for them are still queued: their rebuild reads the store only once those are
 * committed (or failed), so it never misses a change the dropped actor already acknowledged.
 */
const settling = new Map<string, Promise<void>>();

const journal = new Journal({
  commit: (records) => commitBatch(store, records),
  isDataFault,
  onLost: (lost, cause) => {
    console.error(`[actor-thread ${init.index}] commit failed, rebuilding ${lost.size} actor(s):`, (cause as Error)?.message ?? cause);
    for (const key of lost) {
      const slot = actors.get(key);
      actors.delete(key);
      if (slot && 'actor' in slot && slot.actor instanceof QueueActor) {
        for (const w of slot.actor.drainWaiters()) w.respond(() => ({ jobs: [] }));
      }
      const settled = new Promise<void>((resolve) => journal.after({ ok: () => resolve(), fail: () => resolve() }, 0));
      settling.set(key, settled);
      void settled.then(() => {
        if (settling.get(key) === settled) settling.delete(key);
      });
    }
  },
  publish: (events) => send({ id: -1, ok: true, events }),
  observe: (records, ms, committed) => {
    if (!committed) stats.failed++;
    else {
      stats.records.push(records);
      stats.ms.push(ms);
    }
  },
});

// Commit sizes and durations go to the main thread (metrics) once a second, not once per commit.
let stats: CommitStats = { records: [], ms: [], failed: 0 };
setInterval(() => {
  if (stats.records.length === 0 && stats.failed === 0) return;
  send({ id: -2, ok: true, stats });
  stats = { records: [], ms: [], failed: 0 };
}, 1_000).unref();

/** Sends the reply once everything written so far is committed. */
function replyAfterCommit<T>(id: number, reply: Reply<T>, token: Token = currentToken): void {
  journal.after({
    ok: (out) => {
      try {
        ok(id, reply(out));
      } catch (err) {
        fail(id, err);
      }
    },
    fail: (err) => fail(id, err),
  }, token);
}

function load(key: string, organizationId: string, queueName: string, first: Ask | null): void {
  const pending: Ask[] = first ? [first] : [];
  actors.set(key, { loading: pending });
  (settling.get(key) ?? Promise.resolve()).then(() => build(organizationId, queueName)).then(
    (actor) => {
      actors.set(key, { actor });
      // Leases that ran out while nobody owned the queue are given up now.
      if (actor instanceof QueueActor) run(key, actor, () => actor.tick(fx));
      for (const m of pending) dispatch(m, actor);
    },
    (err) => {
      actors.delete(key);
      for (const m of pending) fail(m.id, err instanceof AppError ? err : new AppError('UNAVAILABLE', `could not load ${key}: ${(err as Error).message}`));
    },
  );
}

async function build(organizationId: string, queueName: string): Promise<Actor> {
  if (queueName === ORG_ACTOR) {
    const snapshot = await loadOrganization(store, organizationId, clock.now());
    if (!snapshot) throw new AppError('NOT_FOUND', 'Organization not found');
    send({ id: -1, ok: true, events: [{ type: 'org.loaded', organization_id: organizationId }] });
    return new OrgActor(organizationId, init.config.planOverrides, snapshot);
  }
  const { queue, live } = await loadQueue(store, organizationId, queueName);
  return new QueueActor(organizationId, queueName, settings, queue, live);
}

function onAsk(m: Ask): void {
  const key = actorKey(m.org, m.queue);
  const slot = actors.get(key);
  // Tells adjust counters of loaded actors only: an actor built from rows already counts every committed change
  // (and one being built may or may not: dropping the tell then errs on the side of a higher count).
  if (m.id === 0 && (!slot || 'loading' in slot)) return;
  if (!slot) return load(key, m.org, m.queue, m);
  if ('loading' in slot) {
    slot.loading.push(m);
    return;
  }
  dispatch(m, slot.actor);
}

function dispatch(m: Ask, actor: Actor): void {
  const key = actorKey(m.org, m.queue);
  if (actor instanceof OrgActor) {
    currentKey = key;
    currentToken = ++lastToken;
    try {
      // Quota answers need no commit: they acknowledge nothing durable by themselves (see org-actor.ts).
      ok(m.id, handleOrg(m, actor));
    } catch (err) {
      fail(m.id, err);
    }
    return;
  }
  try {
    run(key, actor, () => handle(m, actor));
  } catch (err) {
    // Errors also wait for the commit: they may describe state an in-flight batch has not made durable yet.
    replyAfterCommit(m.id, () => {
      throw err;
    });
  }
}

/** Runs fn as the given actor: its records are tagged with its key and its timers re-armed after. */
function run(key: string, actor: QueueActor, fn: () => void): void {
  currentKey = key;
  currentToken = ++lastToken;
  try {
    fn();
  } finally {
    arm(key, actor);
  }
}

function handle(m: Ask, actor: QueueActor): void {
  const a = m.args as any;
  switch (m.op) {
    case 'enqueue':
      return replyAfterCommit(m.id, actor.enqueue(a, fx));
    case 'claim': {
      const reply = actor.claim(a, fx);
      if (reply) return replyAfterCommit(m.id, reply);
      if (!a.wait_ms || actor.paused) return replyAfterCommit(m.id, (): ClaimReply => ({ jobs: [] }));
      const key = actorKey(m.org, m.queue);
      // The claim's own token: whoever's message later feeds the waiter, the answer belongs to this request.
      const token = currentToken;
      let timer: NodeJS.Timeout | undefined;
      const w: Waiter = {
        input: a,
        respond: (r) => {
          clearTimeout(timer);
          replyAfterCommit(m.id, r, token);
        },
      };
      actor.addWaiter(w);
      timer = setTimeout(() => {
        const slot = actors.get(key);
        if (slot && 'actor' in slot && slot.actor === actor && actor.removeWaiter(w)) replyAfterCommit(m.id, (): ClaimReply => ({ jobs: [] }), token);
      }, a.wait_ms);
      return;
    }
    case 'complete':
      return replyAfterCommit(m.id, actor.complete(a, fx));
    case 'fail':
      return replyAfterCommit(m.id, actor.fail(a, fx));
    case 'heartbeat':
      return replyAfterCommit(m.id, actor.heartbeat(a, fx));
    case 'cancel':
      return replyAfterCommit(m.id, actor.cancel(a.id, fx) ?? (() => null));
    case 'priority':
      return replyAfterCommit(m.id, actor.setPriority(a.id, a.priority, fx) ?? (() => null));
    case 'revive':
      return replyAfterCommit(m.id, actor.revive(a.jobs, a.from, fx));
    case 'release':
      return replyAfterCommit(m.id, actor.release(a.ids, fx));
    case 'unclaim':
      return replyAfterCommit(m.id, actor.unclaim(a.items, fx));
    case 'createQueue':
      return replyAfterCommit(m.id, actor.createQueue(a, fx));
    case 'pause':
      return replyAfterCommit(m.id, actor.pause(a.reason, fx));
    case 'resume':
      return replyAfterCommit(m.id, actor.resume(fx));
    case 'configure':
      return replyAfterCommit(m.id, actor.configure(a, fx));
    case 'deleteQueue':
      return replyAfterCommit(m.id, actor.deleteQueue(fx));
    default:
      throw new AppError('INTERNAL', `unknown operation ${m.op}`);
  }
}

function handleOrg(m: Ask, actor: OrgActor): unknown {
  const a = m.args as any;
  switch (m.op) {
    case 'admit':
      actor.admitJobs(a.n, a.payloadBytes, fx);
      return { day: actor.today(fx.now), granted: actor.grant(a.credit ?? 0, fx), payloadCap: actor.payloadCap };
    case 'releaseJobs':
      return actor.releaseJobs(a.n, a.day, fx);
    case 'jobsFinished':
      return actor.jobsFinished(a.n);
    case 'reserve':
      return actor.reserve(a.resource);
    case 'counted':
      return actor.counted(a.resource, a.delta);
    case 'setPlan':
      return actor.setPlan(a.plan, a.overrides);
    case 'resetUsage':
      return actor.resetUsage(fx);
    case 'usage':
      return actor.usage(fx.now);
    default:
      throw new AppError('INTERNAL', `unknown organization operation ${m.op}`);
  }
}

// --- timers: one heap of wake-ups for all queue actors of the thread ---
interface Wake {
  at: number;
  key: string;
  actor: QueueActor;
}
const wakes = new Heap<Wake>((a, b) => a.at < b.at);
const armed = new WeakMap<QueueActor, number>();
let timer: NodeJS.Timeout | null = null;
let timerAt = Infinity;

function arm(key: string, actor: QueueActor): void {
  const at = actor.nextWake();
  if (at === null || armed.get(actor) === at) return;
  armed.set(actor, at);
  wakes.push({ at, key, actor });
  if (!clock.manual && at < timerAt) {
    if (timer) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(fireDue, Math.min(Math.max(0, at - clock.now()), 2 ** 31 - 1));
  }
}

function fireDue(): void {
  timer = null;
  timerAt = Infinity;
  const now = clock.now();
  const due: Wake[] = [];
  while (wakes.size > 0 && wakes.peek()!.at <= now) due.push(wakes.pop()!);
  for (const w of due) {
    const slot = actors.get(w.key);
    if (!slot || !('actor' in slot) || slot.actor !== w.actor) continue;
    if (armed.get(w.actor) === w.at) armed.delete(w.actor);
    run(w.key, w.actor, () => w.actor.tick(fx));
  }
  const next = wakes.peek();
  if (next && !clock.manual) {
    timerAt = next.at;
    timer = setTimeout(fireDue, Math.min(Math.max(0, next.at - clock.now()), 2 ** 31 - 1));
  }
}

// --- boot and control ---
async function boot(): Promise<void> {
  const queues = await liveQueues(store);
  for (const q of queues) {
    const key = actorKey(q.organization_id, q.queue_name);
    if (shardOf(key, init.threads) === init.index && !actors.has(key)) load(key, q.organization_id, q.queue_name, null);
  }
}

port.on('message', (batch: ThreadIn[]) => {
  for (const m of batch) {
    switch (m.t) {
      case 'ask':
        onAsk(m);
        break;
      case 'tick':
        fireDue();
        journal.idle().then(() => ok(m.id, null));
        break;
      case 'stop':
        if (timer) clearTimeout(timer);
        journal
          .idle()
          .then(() => store.close())
          .then(() => ok(m.id, null), (err) => fail(m.id, err));
        break;
    }
  }
});

boot().then(
  () => port.postMessage([{ id: 0, ok: true, value: 'ready' }]),
  (err) => port.postMessage([{ id: 0, ok: false, error: new AppError('UNAVAILABLE', `boot failed: ${err.message}`).toWire() }]),
);
