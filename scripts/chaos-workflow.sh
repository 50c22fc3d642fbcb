#!/usr/bin/env bash
# The workflow chaos run (tests/js/workflow-chaos.test.mjs) in headless Chromium: three tabs
# start and signal runstore/workflow workflows on one OPFS store while the leader tab, whose
# engine runs them, is closed or has its renderer crashed every 0.5-3 s of its lead; every step
# body calls a counting service on loopback HTTP with its idempotency key. It proves, from the
# service's log and the journals read back: every workflow (and its child) completed once with
# the result its steps' answers and its signals make; every step has one recorded result, the
# service's answer for its key, in the journal and the effect ledger; a body ran again only
# when its tab was killed with its call in flight, under the same key with the next attempt;
# every signal id was delivered once, however often sent; no timer fired early. Then its
# negative controls must fail the same check: an engine that does not record step results, and
# one that runs the workflows in every tab (only the service's log shows that one).
# `npm test` runs it short (scripts/test-js.sh, Chromium); --long runs 150 workflows over
# some 80 leader kills. WORKFLOW_CHAOS_VERBOSE=1 prints each kill; WORKFLOW_CHAOS_LEAD_MS=0-300
# kills each leader sooner after it took the lead (default 500-3000).
# Usage: scripts/chaos-workflow.sh [--long]
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  --long) export WORKFLOW_CHAOS=long ;;
  '') ;;
  *) echo "usage: $0 [--long]" >&2; exit 2 ;;
esac
source scripts/env.sh
bash scripts/build-test-app.sh
exec node --test --test-concurrency=1 tests/js/workflow-chaos.test.mjs
