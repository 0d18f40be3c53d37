# `make run` serves the app locally; `make test` installs everything and runs the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-lowest install services lint typecheck unit bench clean console-assets

$(STAMP): requirements.txt requirements-dev.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# pip before 23.3 stops on an 'InconsistentCandidate' resolver error for this set (the
	# OpenTelemetry packages' ~= pins); a current pip resolves it.
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade 'pip>=24'
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(STAMP)

install: $(STAMP)

# The worker setting the HTTP streams types need (build_app refuses to start without it), and the
# request body limit the app documents (docs/hosting.md "Body limits"), as Azure's app setting;
# the offline model streams its answer a word every 50 ms, so `curl -N` shows tokens arriving.
run: install
	PYTHON_ENABLE_INIT_INDEXING=$${PYTHON_ENABLE_INIT_INDEXING:-1} FUNCTIONS_REQUEST_BODY_SIZE_LIMIT=$${FUNCTIONS_REQUEST_BODY_SIZE_LIMIT:-262144} AGENTS_OFFLINE_STREAM_DELAY=$${AGENTS_OFFLINE_STREAM_DELAY:-0.05} $(PY) -m devhost --startup-hook agents.testing:start_offline_model_if_unconfigured $(ARGS)

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
		MYPYPATH=tests/$$d:tests/$$d/apps:tests/hosting:tests/e2e $(PY) -m mypy --explicit-package-bases tests/$$d || exit 1; \
	done
	$(PY) -m mypy --explicit-package-bases tests/conftest.py

unit: install services
	$(PY) -m pytest $(PYTEST_ARGS)

test: lint typecheck unit

# The suite again, in a second environment holding the lowest version of every direct requirement
# that requirements*.txt allow (uv's lowest-direct resolution): those bounds must really work.
# .ci/run runs it after `make test`.
LOWEST := .venv-lowest
test-lowest: install services
	rm -rf $(LOWEST)
	$(PY) -m uv venv --quiet --python $(PYTHON) $(LOWEST)
	$(PY) -m uv pip install --quiet --python $(LOWEST)/bin/python --resolution lowest-direct -r requirements-dev.txt
	$(LOWEST)/bin/python -m pytest -p no:cacheprovider $(PYTEST_ARGS)

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

clean:
	rm -rf $(VENV) $(LOWEST) .pytest_cache .mypy_cache .ruff_cache .hypothesis
