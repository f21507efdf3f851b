#!/usr/bin/env bash
# `make test`'s two pytest passes, side by side: the embedded pass (SQLite, the SQLite broker) in
# EMBEDDED_PROCESSES processes, its output here as it goes; the production pass (PostgreSQL, Redis:
# the variables PROD_ENV gives) in PRODUCTION_PROCESSES processes beside it, its output kept in
# var/production-pass.log and printed once the embedded pass has ended. Each pass alone leaves a
# third of the two cores idle (tests wait on workers, servers, browsers and brokers): side by side
# they fill it (three processes for the embedded pass beside the production pass's one were no
# faster: 1,529 s against 1,512 s, the cores full). The second session numbers its processes from
# TEST_PROCESS_OFFSET (tests/conftest.py), so that the two never take the same ports or Redis databases.
#
#   usage: tests/passes.sh "<the production pass's environment>"   (run by make test)
# Exits non-zero when either pass failed. Each pass prints its wall time and its 25 slowest tests.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
XDIST=(--dist loadgroup --no-loadscope-reorder --durations=25)
mkdir -p var
log=var/production-pass.log
# side by side, a test file takes about 1.5 times its time alone: tests/budget.py's budgets scaled so
export TEST_BUDGET_SCALE="${TEST_BUDGET_SCALE:-1.5}"
began=$(date +%s)

( start=$(date +%s)
  env $1 TEST_PROCESS_OFFSET=4 $PY -m pytest -m production -n "${PRODUCTION_PROCESSES:-1}" "${XDIST[@]}" > "$log" 2>&1
  rc=$?
  echo "make test: $(( $(date +%s) - start )) s for the production pass (exit status $rc)" >> "$log"
  exit $rc ) &
production=$!

start=$(date +%s)
$PY -m pytest -n "${EMBEDDED_PROCESSES:-2}" "${XDIST[@]}"
embedded=$?
echo "make test: $(( $(date +%s) - start )) s for the embedded pass (exit status $embedded)"

wait $production
production_rc=$?
echo
echo "================ the production pass (PostgreSQL, Redis), run beside it: $log ================"
cat "$log"
echo "make test: $(( $(date +%s) - began )) s for both passes; the CPU time of what they ran (user, then system):"
times > var/passes-cpu.txt  # (in this shell: a pipe would run it in a child that has none)
tail -1 var/passes-cpu.txt
[ "$embedded" = 0 ] && [ "$production_rc" = 0 ]
