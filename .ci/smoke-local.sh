#!/usr/bin/env bash
# `make smoke`'s checks against the local host in Flex Consumption's topology (HTTP/MCP and Durable
# functions in separate groups of two worker processes each), with a function key, as CI runs them.
# The run's event streams go to one SQLite file the two groups share, standing in for the shared
# store (Redis) a deployment across instances needs (docs/streaming.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
data=$(mktemp -d)
port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
key=smoke-$RANDOM$RANDOM
log="$data/host.log"
DEVHOST_FUNCTION_KEY=$key FUNCTIONS_WORKER_PROCESS_COUNT=2 PYTHON_ENABLE_INIT_INDEXING=1 \
    PYTHON_THREADPOOL_THREAD_COUNT=300 DURABLE_AGENTS_STREAM_PATH="$data/streams.db" \
    DURABLE_AGENTS_HISTORY_DIR="$data/history" \
    $PY -m devhost --port "$port" --data-dir "$data/devhost" --topology flex \
    --startup-hook agents.testing:start_offline_model_if_unconfigured >"$log" 2>&1 &
host=$!
trap 'kill $host 2>/dev/null; wait $host 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 1 240); do
    grep -q "devhost ready on" "$log" && break
    kill -0 $host 2>/dev/null || { cat "$log"; exit 1; }
    sleep 0.25
done
grep -q "devhost ready on" "$log" || { echo "smoke-local: the host did not start"; cat "$log"; exit 1; }
$PY .ci/smoke.py --url "http://127.0.0.1:$port" --key "$key" || { echo "--- host log"; tail -50 "$log"; exit 1; }
