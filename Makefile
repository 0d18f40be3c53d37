# `make run` serves the app locally; `make test` installs everything and runs the whole suite.

# The app runs on Python 3.13 (what Azure's Flex Consumption runs, with the pinned execution runtime);
# 3.11 is the oldest Python it supports, tested by `make test-lowest`. Each is pyenv's when installed,
# else the one on PATH; PYTHON=... / PYTHON_LOWEST=... choose others.
find_python = $(shell p="$$(pyenv prefix $(1) 2>/dev/null)"; if [ -x "$$p/bin/python$(2)" ]; then echo "$$p/bin/python$(2)"; else command -v python$(2); fi)
# (looked up once, when not given)
ifeq ($(origin PYTHON),undefined)
PYTHON := $(call find_python,3.13.0,3.13)
endif
ifeq ($(origin PYTHON_LOWEST),undefined)
PYTHON_LOWEST := $(call find_python,3.11.7,3.11)
endif
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LOCAL_STAMP := $(VENV)/.installed-local
# uv, as requirements-local.txt bounds it: what installs every environment below
UV_REQUIREMENT := $(shell sed -n 's/^\(uv[<>=][^ ;\#]*\).*/\1/p' requirements-local.txt)
UV_INSTALL := $(PY) -m uv pip install --quiet --compile-bytecode --python $(PY)
# The project's own modules compiled to bytecode (what uv's --compile-bytecode does for the packages):
# where PYTHONDONTWRITEBYTECODE is set (CI images often set it) Python writes no cache of its own: every process
# (the host, each worker process) compiled some 180 modules from source: a quarter of a worker's start
# (docs/bench.md "Host start"). Up-to-date files are skipped; a file edited since is compiled again
# when it is imported, and on the next install.
PROJECT_SOURCES := function_app.py agents hosting state devhost examples bench tests
COMPILE_PROJECT = -m compileall -q -j0 -x '/(node_modules|static)/' $(PROJECT_SOURCES) > /dev/null

.PHONY: run test test-lowest install services lint typecheck unit e2e-flex smoke smoke-local deploycheck iac-check bench clean console-assets

# Two steps: what `make run` needs (the app and the local host: requirements-local.txt), then the
# test, lint and type-check tools (requirements-dev.txt), which only the test targets install.
$(LOCAL_STAMP): requirements.txt requirements-local.txt
	@test -n "$(PYTHON)" || { echo "Python 3.13 not found: install it (pyenv install 3.13.0), or name one with PYTHON=/path/to/python3.13" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 13) else "$(PYTHON) is Python %d.%d: the app runs on 3.13 (pyenv install 3.13.0)" % sys.version_info[:2])'
	@# a .venv made with another Python (an older checkout's) is made again
	@if [ -x $(PY) ] && [ "$$($(PY) -c 'import sys; print(sys.version)')" != "$$($(PYTHON) -c 'import sys; print(sys.version)')" ]; then \
		echo "$(VENV) runs another Python than $(PYTHON): making it again"; rm -rf $(VENV); fi
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@# pip installs uv, uv the rest: on a clean machine (an empty package cache, as in CI) pip took
	@# 3.5 minutes for the test environment, uv 14 s (docs/bench.md "Running the tests"). uv reads the
	@# index from UV_INDEX_URL / UV_EXTRA_INDEX_URL, not from pip's configuration.
	$(PY) -m pip install --quiet --disable-pip-version-check '$(UV_REQUIREMENT)'
	$(UV_INSTALL) -r requirements-local.txt
	$(PY) $(COMPILE_PROJECT)
	touch $(LOCAL_STAMP)

$(STAMP): $(LOCAL_STAMP) requirements-dev.txt
	$(UV_INSTALL) -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)
	@$(PY) $(COMPILE_PROJECT)

# The app settings local.settings.sample.json gives: the Python worker's threads (one per running
# sync function or entity batch) and PYTHON_ENABLE_INIT_INDEXING (the HTTP streams types need it;
# build_app refuses to start without it); the request body limit the app documents
# (docs/hosting.md "Body limits"), as Azure's app setting; the offline model streams its answer a
# word every 50 ms, so `curl -N` shows tokens arriving. --reload: a changed Python file restarts the host.
# The startup hook starts the offline model (when no model is configured) and the example MCP server.
run: $(LOCAL_STAMP)
	PYTHON_THREADPOOL_THREAD_COUNT=$${PYTHON_THREADPOOL_THREAD_COUNT:-300} PYTHON_ENABLE_INIT_INDEXING=$${PYTHON_ENABLE_INIT_INDEXING:-1} FUNCTIONS_REQUEST_BODY_SIZE_LIMIT=$${FUNCTIONS_REQUEST_BODY_SIZE_LIMIT:-262144} AGENTS_OFFLINE_STREAM_DELAY=$${AGENTS_OFFLINE_STREAM_DELAY:-0.05} $(PY) -m devhost --reload --startup-hook examples.local_services:start_local_services $(ARGS)

# The real servers the tests start (Redis, Azurite, Chromium): .ci/services.sh installs what is missing.
services:
	bash .ci/services.sh

lint: install
	$(PY) -m ruff check .

# Each test folder is checked on its own: its support modules are imported as top-level names
# (pytest puts the folder on sys.path), and every folder has a conftest.py of its own. tests/hosting is
# on the path for all: tests/examples drives its apps with hosting_support.
TEST_DIRS := state agents devhost hosting examples e2e console

typecheck: install
	$(PY) -m mypy
	@for d in $(TEST_DIRS); do \
		echo "mypy tests/$$d"; \
		MYPYPATH=tests/$$d:tests/$$d/apps:tests/hosting:tests/e2e:tests $(PY) -m mypy --explicit-package-bases tests/$$d || exit 1; \
	done
	$(PY) -m mypy --explicit-package-bases tests/conftest.py

# The suite runs in parallel (pytest-xdist): every test is independent of the others, each worker
# process starts its own session servers (the scripted model, Redis, the e2e host) on free ports and
# its own temp dirs, and most of a test's time is spent waiting on sockets and subprocesses, so more
# workers than the machine's cores still pay off (docs/bench.md "Running the tests" has the figures).
# --dist worksteal gives each worker a run of consecutive tests (a module's hosts, browser and
# Azurite mostly start once per worker) and lets an idle worker take the rest of a busy one's: with
# a test file per worker (--dist loadfile) the slowest file, a few minutes, set the end.
# PYTEST_WORKERS=0 runs the suite in this one process, in order.
PYTEST_WORKERS ?= 4
PYTEST_PARALLEL := $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist worksteal)
# pytest exits 5 when it collected no test: a failure of the whole suite, but what a selection in
# PYTEST_ARGS (-k, a path) gives a run holding none of it (e2e-flex for a hosting test).
PYTEST_OK = status=$$?; [ $$status -eq 0 ] || $(if $(strip $(PYTEST_ARGS)),[ $$status -eq 5 ] ||) exit $$status

unit: install services
	$(PY) -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS); $(PYTEST_OK)

# The end-to-end suite again in Flex Consumption's topology: HTTP/MCP and Durable functions in
# separate groups of worker processes, two per group (docs/devhost.md "Worker processes").
e2e-flex: install services
	DEVHOST_TOPOLOGY=flex FUNCTIONS_WORKER_PROCESS_COUNT=2 $(PY) -m pytest $(PYTEST_PARALLEL) tests/e2e $(PYTEST_ARGS); $(PYTEST_OK)

# A deployed app's first check: make smoke URL=https://<app>.azurewebsites.net KEY=<function key>
# [SYSTEM_KEY=<durabletask_extension key>] [MCP_KEY=<mcp_extension key>] (docs/deploy.md).
smoke: install
	$(PY) .ci/smoke.py --url "$(URL)" --key "$(KEY)" --system-key "$(SYSTEM_KEY)" --mcp-key "$(MCP_KEY)"

# The same checks against the local host in the flex topology.
smoke-local: install
	PY=$(PY) bash .ci/smoke-local.sh

# The static checks run side by side (each is one process; mypy is the longest), their output kept
# whole per check; then the pytest runs, one after the other (each is parallel on its own).
CHECKS := lint typecheck deploycheck iac-check
test: install services
	$(MAKE) --no-print-directory -j$(words $(CHECKS)) --output-sync=target $(CHECKS)
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory e2e-flex
	$(MAKE) --no-print-directory smoke-local

# Azure installs requirements.txt on Linux from prebuilt wheels: every requirement must resolve to
# wheels for every Python the app supports, or a deployment fails there. Azure's Python images are
# Debian 12; a manylinux_2_28 target accepts manylinux_2_28 and every older manylinux tag
# (manylinux2014 included), all of which run there. uv resolves for a Python and platform other than
# its own, environment markers included (pip's --python-version does not apply to markers: run from
# 3.13 it would check the 3.13 set of requirements three times), and names the package without wheels.
DEPLOY_PYTHONS := 3.11 3.12 3.13
deploycheck: install
	@for v in $(DEPLOY_PYTHONS); do \
		echo "deploycheck: requirements.txt as Linux wheels for Python $$v"; \
		$(PY) -m uv pip compile --quiet --no-header --python-version $$v --python-platform x86_64-manylinux_2_28 \
			--only-binary :all: requirements.txt -o /dev/null || exit 1; \
	done

# The deployment kit (azure.yaml, infra/, .github/workflows/), checked without Azure: every .bicep
# file parses (pycep-parser), checkov's Azure policies and this app's own (infra/policies/: identity-only
# storage and Redis, Python 3.13 with a user-assigned identity) pass on infra/ (a check skipped inline
# says why), and actionlint and zizmor pass on the workflows. The tools live in an environment of their own
# (requirements-iac.txt), made with the default python3: checkov pins its own pycep-parser and many
# other packages. Offline: checkov's --skip-download leaves out its calls to Prisma Cloud, zizmor's
# --offline its GitHub lookups. What these checks cannot catch: docs/deploy.md.
IAC_VENV := .venv-iac
IAC_STAMP := $(IAC_VENV)/.installed
$(IAC_STAMP): requirements-iac.txt $(LOCAL_STAMP)
	rm -rf $(IAC_VENV)
	$(PY) -m uv venv --quiet --python python3 $(IAC_VENV)
	$(PY) -m uv pip install --quiet --python $(IAC_VENV)/bin/python -r requirements-iac.txt
	touch $(IAC_STAMP)

iac-check: $(IAC_STAMP)
	$(IAC_VENV)/bin/python .ci/bicep_parse.py infra
	$(IAC_VENV)/bin/checkov --directory infra --framework bicep --external-checks-dir infra/policies \
		--skip-download --quiet --compact
	$(IAC_VENV)/bin/actionlint .github/workflows/*.yml
	$(IAC_VENV)/bin/zizmor --offline .github/workflows

# The suite again, on Python 3.11 (the oldest the app supports) in a second environment holding the
# lowest version of every direct requirement that requirements*.txt allow (uv's lowest-direct
# resolution): those bounds must really work. .ci/run runs it after `make test`.
# On 3.11/3.12 Azure runs the app with its own Python worker, which is not on PyPI; the runtime the
# app pins for 3.13 is the same indexing and invocation code split out of that worker, so it is added
# here too (the local host loads the app through it). It declares Requires-Python >=3.13, hence
# --ignore-requires-python; --no-deps because its dependencies are already installed (azure-functions
# at its floor; azurefunctions-extensions-base with the HTTP streaming extension), as the import checks.
LOWEST := .venv-lowest
RUNTIME_PIN := $(shell sed -n 's/^\(azure-functions-runtime==[^ ;]*\).*/\1/p' requirements.txt)
test-lowest: install services
	@test -n "$(PYTHON_LOWEST)" || { echo "Python 3.11 not found: install it (pyenv install 3.11.7), or name one with PYTHON_LOWEST=/path/to/python3.11" >&2; exit 1; }
	rm -rf $(LOWEST)
	$(PY) -m uv venv --quiet --python $(PYTHON_LOWEST) $(LOWEST)
	$(PY) -m uv pip install --quiet --compile-bytecode --python $(LOWEST)/bin/python --resolution lowest-direct -r requirements-dev.txt
	$(PY) -m pip --python $(LOWEST)/bin/python install --quiet --disable-pip-version-check --no-deps --ignore-requires-python '$(RUNTIME_PIN)'
	$(LOWEST)/bin/python -c 'import azure_functions_runtime, azurefunctions.extensions.base'
	$(LOWEST)/bin/python $(COMPILE_PROJECT)
	@# --assert=plain: CPython before 3.11.8 fails every ast.parse, pytest's rewriting of a lazily imported
	@# plugin module included, once hypothesis has changed the recursion limit (python/cpython#106905).
	$(LOWEST)/bin/python -m pytest --assert=plain -p no:cacheprovider $(PYTEST_PARALLEL) $(PYTEST_ARGS); $(PYTEST_OK)

# The console's browser libraries (marked, DOMPurify, eventsource-parser) from package-lock.json,
# copied into hosting/console/static/vendor/ (committed; a test checks they are up to date).
console-assets: install
	npm ci --no-audit --no-fund --loglevel=error
	$(PY) -m hosting.console._vendor

bench: install
	$(PY) bench/state_bench.py
	$(PY) bench/host_bench.py
	$(PY) bench/wait_bench.py
	$(PY) bench/telemetry_bench.py
	$(PY) bench/stream_bench.py
	$(PY) bench/expiry_bench.py

clean:
	rm -rf $(VENV) $(LOWEST) $(IAC_VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
