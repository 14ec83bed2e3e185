// The rate limiter's cost per request, alone: `node --import tsx bench/rate-limiter.ts`. It runs on every
// authenticated request on the main thread, so it must stay a small fraction of a request's ~100 µs there.
// A real (in-memory PGlite) store supplies the organizations; the clock steps 2 ms per request, so the limited
// organization (enterprise: 500/s, burst 1,000) is exercised at its full rate without being refused.
import { randomUUID } from 'node:crypto';
import { ManualClock } from '../src/clock.js';
import { migrate } from '../src/io/db/migrate.js';
import { PgliteStore } from '../src/io/db/pglite.js';
import { RateLimiter } from '../src/app/rate-limit.js';

const N = Number(process.env.BENCH_LIMITER_CALLS ?? 1_000_000);
const store = await PgliteStore.open(null);
await migrate(store);
const clock = new ManualClock(Date.UTC(2030, 0, 1));
const limiter = new RateLimiter(store, clock, {});

async function orgWith(overrides: Record<string, number | null>): Promise<string> {
  const id = randomUUID();
  await store.query(
    `INSERT INTO organizations (id, name, slug, plan, limit_overrides, created_at, updated_at)
     VALUES ($1, 'bench', $2, 'enterprise', $3::jsonb, now(), now())`,
    [id, `bench-${id.slice(0, 8)}`, JSON.stringify(overrides)],
  );
  return id;
}

for (const [label, org] of [
  ['unlimited (bootstrap organization)', await orgWith({ rate_per_second: null, burst: null })],
  ['enterprise: 500/s, burst 1000', await orgWith({})],
] as const) {
  await limiter.admit(org); // loads and caches the limits
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    await clock.advance(2);
    await limiter.admit(org);
  }
  const ns = Number(process.hrtime.bigint() - t0) / N;
  console.log(`| ${label} | ${ns.toFixed(0)} ns per request (incl. clock step) |`);
}
await store.close();
