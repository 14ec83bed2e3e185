#!/usr/bin/env bash
# The peer benchmark (../shared/bench-peers: Sluice against BullMQ, graphile-worker and pg-boss on one machine with
# one workload) with this repository's Sluice driver, bench/peers/bench-sluice.mjs: the shared driver plus the
# worker variants Sluice has since gained (ack: batch acknowledgements; ackclaim: acknowledgements that claim the next jobs; grpc: a ProcessJobs stream; sdk, sdk-grpc:
# the TypeScript SDK's Worker; sdk-prefetch, sdk-grpc-prefetch: the same holding 50 jobs ahead; sdk-batched, sdk-grpc-batched: 450 ahead). The shared folder is read-only, so it is copied to BENCH_PEERS_WORK (default
# .tmp/bench-peers), the driver is laid over it and the new variants are added to run-all.sh's matrix.
#
#   bench/peers/run.sh                                   # every peer and variant, ROUNDS=3 interleaved rounds
#   ROUNDS=2 ONLY='sluice|bullmq.mjs +BENCH_BULLMQ_BACKEND=redis|graphile.* batched' bench/peers/run.sh
#   BENCH_SLUICE_COMPILED=1 bench/peers/run.sh           # the node runs dist/ (make build first), as in production
#
# Prerequisites are the shared harness's (its README): PostgreSQL with role bench and its databases, Redis.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
src=${BENCH_PEERS_DIR:-$root/../shared/bench-peers}
work=${BENCH_PEERS_WORK:-$root/.tmp/bench-peers}
mkdir -p "$work"
cp -r "$src"/. "$work"/
chmod -R u+w "$work"
cp "$here/bench-sluice.mjs" "$work/bench-sluice.mjs"
# The lock file of the shared folder lacks some optional platform packages, which `npm ci` refuses.
[ -d "$work/node_modules" ] || (cd "$work" && npm install --no-audit --no-fund)
# Our variants join the matrix after the shared Sluice rows.
rows=$(for v in ack ackclaim grpc sdk sdk-grpc sdk-prefetch sdk-grpc-prefetch sdk-batched sdk-grpc-batched; do printf '  "bench-sluice.mjs            -                                 process         %s"\\n' "$v"; done
       printf '  "bench-sluice.mjs            -                                 latency         sdk"\\n')
sed -i "/\"bench-sluice.mjs .*latency *batch\"/a\\
$rows" "$work/run-all.sh"
(cd "$root" && make sdk >/dev/null)
cd "$work" && BENCH_SLUICE_ROOT="$root" ./run-all.sh
