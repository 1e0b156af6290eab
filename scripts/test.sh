#!/usr/bin/env bash
# The whole suite (`npm test`), in two lanes at once:
# - the sandbox lane: test/api, test/pg, test/runtime, test/store, one file at a time. Their servers share the
#   host's nft table (the last server started sets the per-box bandwidth and connection bounds), its disks and
#   cgroups, and some of them bound latencies (an event loop stall, a bandwidth), so two of them never overlap;
# - the in-process lane: test/fast and test/unit (inject() on the stub runtime, probes in network namespaces
#   of their own), one file at a time, beside the sandbox lane. Most of the sandbox lane waits on boxes, so
#   the second lane uses the CPU it leaves: the suite's wall time drops by about the in-process lane's.
# The sandbox lane reports as it goes; the in-process lane's report follows it. Fails if either lane fails.
set -uo pipefail
cd "$(dirname "$0")/.."

run() {
  node --import tsx --test --test-concurrency=1 --test-timeout=600000 "$@"
}

quick_log=$(mktemp -t devboxd-test-quick.XXXXXX)
trap 'rm -f "$quick_log"' EXIT
start=$(date +%s)
run test/fast/*.test.ts test/unit/*.test.ts >"$quick_log" 2>&1 &
quick=$!

run test/api/*.test.ts test/pg/*.test.ts test/runtime/*.test.ts test/store/*.test.ts
sandbox_rc=$?
sandbox_s=$(($(date +%s) - start))

wait "$quick"
quick_rc=$?
echo
echo "# ---- in-process lane (test/fast, test/unit) ----"
cat "$quick_log"
echo
echo "# sandbox lane: exit ${sandbox_rc} after ${sandbox_s} s; in-process lane: exit ${quick_rc}; whole suite $(($(date +%s) - start)) s"
[ "$sandbox_rc" -eq 0 ] && [ "$quick_rc" -eq 0 ]
