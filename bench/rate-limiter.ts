// The rate limiter's cost per request, alone: `node --import tsx bench/rate-limiter.ts`. It runs on every
// authenticated request on the main thread, so it must stay a small fraction of a request's ~100 µs there.
// The organization's counter is a real OrgActor answered in the same turn (no thread hop: that is measured by
// `make bench`); the clock steps 2 ms per request, so the limited organization (enterprise: 500/s, burst 1,000)
// runs at its full rate without being refused, and its node asks for 25 admissions at a time.
import { OrgActor } from '../src/actors/org/org-actor.js';
import { ManualClock } from '../src/clock.js';
import { RateLimiter } from '../src/app/rate-limit.js';
import type { ActorPool } from '../src/runtime/actor-pool.js';

const N = Number(process.env.BENCH_LIMITER_CALLS ?? 1_000_000);
const clock = new ManualClock(Date.UTC(2030, 0, 1));
const actorOf = (overrides: Record<string, number | null>) =>
  new OrgActor('bench', {}, { plan: 'enterprise', overrides, day: '2030-01-01', jobsToday: 0, activeJobs: 0, counts: { queues: 0, workers: 0, api_keys: 0, schedules: 0, workflows: 0, webhooks: 0 } });

for (const [label, overrides] of [
  ['unlimited (bootstrap organization)', { rate_per_second: null, burst: null }],
  ['enterprise: 500/s, burst 1000', {}],
] as const) {
  const actor = actorOf(overrides);
  let asks = 0;
  const actors = {
    askOrg: (async (_org: string, _op: 'permits', a: { want: number; holdMs: number }) => {
      asks++;
      return actor.permits(a.want, a.holdMs, clock.now());
    }) as ActorPool['askOrg'],
  };
  const limiter = new RateLimiter(actors, clock);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    await clock.advance(2);
    await limiter.admit('bench');
  }
  const ns = Number(process.hrtime.bigint() - t0) / N;
  console.log(`| ${label} | ${ns.toFixed(0)} ns per request (incl. clock step) | ${asks} asks to the counter |`);
}
