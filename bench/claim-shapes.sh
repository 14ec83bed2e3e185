#!/usr/bin/env bash
# What a claim and a completion cost PostgreSQL in the job table's shape, against a narrower claim (a lease table),
# statement by statement: docs/BENCHMARKS.md, sixteenth session. One client (pgbench), 1,000 statements of 100 jobs
# each, synchronous commit, on a fresh database with the node's migrations.
#   bench/claim-shapes.sh            # BENCH_PG_ADMIN_URL as bench/lib.ts (default postgres://postgres@127.0.0.1:5432/postgres)
set -euo pipefail
cd "$(dirname "$0")/.."
admin=${BENCH_PG_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
db=sluice_claim_shapes_$$
url=${admin%/*}/$db
tmp=$(mktemp -d)
trap 'psql "$admin" -qc "drop database if exists $db" >/dev/null 2>&1; rm -rf "$tmp"' EXIT
psql "$admin" -qc "create database $db"
URL=$url node --import tsx -e "
  import('./src/io/db/pg.ts').then(async ({ PgStore }) => {
    const store = new PgStore(process.env.URL, 1);
    await (await import('./src/io/db/migrate.ts')).migrate(store);
    await store.close();
  });"
# The jobs table has no foreign key: any organization id will do.
org=$(cat /proc/sys/kernel/random/uuid)
P="psql $url -q"

cat >"$tmp/setup.sql" <<SQL
TRUNCATE jobs;
DROP TABLE IF EXISTS ord, leases; DROP SEQUENCE IF EXISTS bseq;
INSERT INTO jobs (id, organization_id, queue_name, status, payload, priority, retry_count, max_retries, timeout_seconds, created_at, updated_at)
SELECT gen_random_uuid(), '$org', 'q', 'pending', jsonb_build_object('task', 'send-email', 'user_id', g, 'template', 'welcome'), 0, 0, 3, 300,
  now() + g * interval '1 microsecond', now()
FROM generate_series(1, 120000) g;
CREATE TABLE ord AS SELECT id, (row_number() OVER (ORDER BY created_at)) - 1 AS n FROM jobs;
CREATE INDEX ON ord (n);
CREATE SEQUENCE bseq START 0 MINVALUE 0;
CREATE TABLE leases (id uuid PRIMARY KEY, lease_id uuid NOT NULL, worker text NOT NULL, started_at timestamptz NOT NULL, expires_at timestamptz NOT NULL);
VACUUM ANALYZE jobs; VACUUM ANALYZE ord;
SQL
batch='SELECT nextval('"'"'bseq'"'"') AS b \gset'
range='o.n >= :b * 100 AND o.n < :b * 100 + 100'
cat >"$tmp/now-claim.sql" <<SQL
$batch
UPDATE jobs j SET status = 'processing', started_at = now(), updated_at = now(), assigned_worker_id = 'w1', lease_id = gen_random_uuid(),
  lease_expires_at = now() + interval '30 s' FROM ord o WHERE $range AND j.id = o.id RETURNING row_to_json(j);
SQL
cat >"$tmp/now-complete.sql" <<SQL
$batch
UPDATE jobs j SET status = 'completed', completed_at = now(), updated_at = now(), result = '{"ok":true}', lease_id = NULL, lease_expires_at = NULL
FROM ord o WHERE $range AND j.id = o.id;
SQL
cat >"$tmp/lease-claim.sql" <<SQL
$batch
WITH l AS (INSERT INTO leases SELECT o.id, gen_random_uuid(), 'w1', now(), now() + interval '30 s' FROM ord o WHERE $range RETURNING id)
SELECT row_to_json(j) FROM jobs j JOIN l ON j.id = l.id;
SQL
cat >"$tmp/lease-complete.sql" <<SQL
$batch
WITH d AS (DELETE FROM leases l USING ord o WHERE $range AND l.id = o.id RETURNING l.id)
UPDATE jobs j SET status = 'completed', completed_at = now(), updated_at = now(), result = '{"ok":true}', started_at = now(), assigned_worker_id = 'w1'
FROM d WHERE j.id = d.id;
SQL

run() {
  $P -c "ALTER SEQUENCE bseq RESTART 0"
  local w0 w1 out
  w0=$(psql "$url" -Atc "select pg_current_wal_lsn()")
  out=$(pgbench -n -c 1 -t 1000 -f "$tmp/$1.sql" "$url" 2>&1)
  w1=$(psql "$url" -Atc "select pg_current_wal_lsn()")
  echo "$1: $(echo "$out" | grep 'latency average' | sed 's/latency average = //') per 100 jobs, WAL $(psql "$url" -Atc "select round(pg_wal_lsn_diff('$w1', '$w0') / 100000.0)") B per job"
}
for round in 1 2; do
  $P -f "$tmp/setup.sql" >/dev/null 2>&1; run now-claim; run now-complete
  $P -f "$tmp/setup.sql" >/dev/null 2>&1; run lease-claim; run lease-complete
done
