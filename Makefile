# Two commands for a new machine: `make run` and `make test`. Each installs what is missing.
SHELL := /bin/bash
PY := .venv/bin/python
PIP := .venv/bin/pip
HOST ?= 127.0.0.1
PORT ?= 8000
SERVING_PORT ?= 8001
# the production path's services, for the tests that exercise it
# (DEBUG is off there, as in production, so it needs a real SECRET_KEY: this one is for tests and benchmarks only)
PROD_ENV := DATABASE_URL=postgres://postgres@127.0.0.1:5432/test CELERY_BROKER_URL=redis://127.0.0.1:6379/14 CHANNEL_LAYER_URL=redis://127.0.0.1:6379/15 \
	SECRET_KEY=make-test-only-0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEFGHIJ

.PHONY: run test worker maintenance serve bench deps chromium lint coverage

.venv/.installed: requirements.txt sdk/pyproject.toml
	test -x $(PY) || python3 -m venv .venv
	$(PIP) install -q --upgrade pip
	@# pip byte-compiles the 16,000 files of the packages one at a time (about 50 s of a core):
	@# compileall does it on every core (a file it cannot compile is left for Python, as pip leaves it)
	$(PIP) install -q --no-compile -r requirements.txt
	$(PY) -m compileall -q -j 0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null || true
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

deps: .venv/.installed node_modules/.installed

# apt's lock may be held (an unattended upgrade, a second checkout installing at the same time): wait for it
chromium:
	@command -v chromium >/dev/null || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  APT="$$SUDO apt-get -o DPkg::Lock::Timeout=600"; \
	  for i in $$(seq 60); do $$APT update -qq && break; echo "apt is busy (another install holds its lock): waiting"; sleep 10; done; \
	  DEBIAN_FRONTEND=noninteractive $$APT install -y -qq chromium >/dev/null; }

# the embedded single-machine app asks for DEBUG (error pages with details, the development secret key)
run: export DEBUG = true
# the web app's endpoint pages show the scoring URL: the same address as the serving process's
run: export SERVING_HOST = $(HOST)
run: export SERVING_PORT := $(SERVING_PORT)
run: deps
	@# the address the headless commands print a run's link under (settings.SITE_URL), in another shell too
	@d="$${DESIGNER_DATA_DIR:-var}"; mkdir -p "$$d" && echo "$${SITE_URL:-http://$(HOST):$(PORT)}" > "$$d/site-url"
	$(PY) manage.py migrate --noinput -v 0
	$(PY) manage.py ensure_admin
	@# the tour's dataset (examples/digits.json names it): scikit-learn's digits as images, made once
	$(PY) manage.py add_sample_datasets
	@# the worker runs in a session of its own, so that Ctrl-C and `kill 0` never reach its pool's
	@# processes: killed from outside, one may die holding the pool's queue lock, and the worker then
	@# hangs for good in its exit; on exit it gets a cold shutdown (QUIT), then anything left is killed
	@setsid $(PY) -m celery -A designer.celery worker -l warning -c 2 -n local@%h & worker=$$!; \
	trap 'kill -QUIT $$worker 2>/dev/null; for i in $$(seq 100); do kill -0 $$worker 2>/dev/null || break; sleep 0.1; done; \
	      kill -KILL -- -$$worker 2>/dev/null; kill 0' EXIT; \
	$(PY) -m designer.serving --host $(HOST) --port $(SERVING_PORT) & \
	$(PY) manage.py maintenance >/dev/null & \
	echo "Pipeline Designer: http://$(HOST):$(PORT)/  (Ctrl-C stops the web app, the worker, the maintenance loop and the scoring endpoints)"; \
	$(PY) manage.py runserver $(HOST):$(PORT) --noreload

worker: deps
	$(PY) -m celery -A designer.celery worker -l info -c $${CONCURRENCY:-2}

# the maintenance loop alone (designer/pipelines/maintenance.py; every worker also runs it, one at a time)
maintenance: deps
	$(PY) manage.py maintenance

# the real-time scoring endpoints alone (production: the same command on each machine, README)
serve: deps
	$(PY) -m designer.serving --host $(HOST) --port $(SERVING_PORT) --replicas $${REPLICAS:-1}

# `make test` prints each step's wall time, and the time since it began (installs included), also
# when the step fails; each pytest pass prints its 25 slowest tests and its slowest files (tests/budget.py)
START := $(shell date +%s)
timed = @echo '$(1)'; t=$$(date +%s); trap 'echo "make test: $$(( $$(date +%s) - t )) s for $(2); \
	$$(( $$(date +%s) - $(START) )) s since make test began"' EXIT; $(1)

# the two pytest passes side by side (tests/passes.sh): the embedded pass in EMBEDDED_PROCESSES
# processes, the production pass in PRODUCTION_PROCESSES beside it (pytest-xdist; each process takes
# whole units of tests, the longest first: tests/conftest.py, _xdist_units). Each pass alone leaves
# a third of the two cores idle, since tests wait on workers, servers and browsers much of their time
EMBEDDED_PROCESSES ?= 2
PRODUCTION_PROCESSES ?= 1
export EMBEDDED_PROCESSES PRODUCTION_PROCESSES
comma := ,

# first the structure (dependencies one way: pyproject.toml's import-linter contracts), the types,
# the docs (links and anchors) and the page script's pure modules (Node's own test runner), side by
# side; then the two passes
test: deps chromium
	$(call timed,$(MAKE) -s --no-print-directory -j 4 --output-sync=target checks,the checks (lint-imports$(comma) mypy$(comma) docs$(comma) Node side by side))
	$(call timed,bash tests/passes.sh "$(PROD_ENV)",the two passes)

checks: check-imports check-types check-docs check-node
check-imports:
	.venv/bin/lint-imports
check-types:
	.venv/bin/mypy
check-docs:
	.venv/bin/mkdocs build --strict --quiet
check-node:
	npm test --silent
.PHONY: checks check-imports check-types check-docs check-node

# line and branch coverage of the Python code over the embedded pass (coverage.py, pyproject.toml's
# [tool.coverage]: every process the tests start is measured); prints the total, the report in var/coverage/
coverage: deps chromium
	$(PY) -c "import coverage" 2>/dev/null || $(PIP) install -q coverage==7.17.0
	rm -rf var/coverage && mkdir -p var/coverage
	$(PY) -m coverage run -m pytest -n $(EMBEDDED_PROCESSES) --dist loadgroup --no-loadscope-reorder -q; \
	  status=$$?; $(PY) -m coverage combine -q && $(PY) -m coverage report > var/coverage/report.txt; \
	  tail -1 var/coverage/report.txt; exit $$status

# every benchmark, one after the other: each prints its figures and ratios against its target
bench: deps chromium
	$(PY) bench/engine.py
	$(PROD_ENV) $(PY) bench/engine.py
	$(PY) bench/train.py
	$(PY) bench/digits_example.py
	$(PY) bench/distributed.py
	SEEDS=1,2,3,4,5 $(PY) bench/distributed_accuracy.py
	$(PY) bench/canvas.py
	$(PY) bench/sweep.py
	$(PY) bench/serve.py
	$(PY) bench/limits.py
	$(PY) bench/store.py
	$(PY) bench/store_digits.py

lint: deps
	.venv/bin/ruff check .
	.venv/bin/lint-imports
