#!/usr/bin/env bash
# Installs the real servers the test suite starts (its fixtures start each on a free port and stop it):
#   redis-server (a single node, and a 3-node cluster: --cluster-enabled yes, joined with
#   redis-cli --cluster create) and chromium from Debian's packages, Azurite and @ag-ui/client from
#   npm into .tools/; and the console's browser libraries from package-lock.json (`npm ci`), which a
#   test compares with the copies committed under hosting/console/static/vendor/.
# Idempotent: whatever is already installed is left alone. `make run` needs none of these.
set -euo pipefail
cd "$(dirname "$0")/.."

AZURITE_VERSION=3.35.0   # the last Azurite line that runs on node 20

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if ((${#missing[@]})); then
    echo "services: installing ${missing[*]} from Debian's packages"
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x .tools/node_modules/.bin/azurite ]; then
    echo "services: installing azurite@${AZURITE_VERSION} from npm into .tools/"
    mkdir -p .tools
    npm install --prefix .tools --no-audit --no-fund --loglevel=error "azurite@${AZURITE_VERSION}" >/dev/null
fi

# tests/e2e/test_e2e_agui_client.py drives the AG-UI edge with the protocol's own TypeScript client.
AGUI_CLIENT_VERSION=1.0.0
if [ ! -f .tools/node_modules/@ag-ui/client/package.json ]; then
    echo "services: installing @ag-ui/client@${AGUI_CLIENT_VERSION} from npm into .tools/"
    mkdir -p .tools
    npm install --prefix .tools --no-audit --no-fund --loglevel=error "@ag-ui/client@${AGUI_CLIENT_VERSION}" >/dev/null
fi

# The cluster tests need redis-cli's --cluster commands and cluster mode: Redis 5 or later.
redis-server --version | grep -qE 'v=([5-9]|[1-9][0-9])\.' || {
    echo "services: redis-server $(redis-server --version) has no cluster mode; Redis 5 or later is needed" >&2
    exit 1
}

# npm writes node_modules/.package-lock.json on install: older than the lockfile means stale.
if [ ! node_modules/.package-lock.json -nt package-lock.json ]; then
    echo "services: npm ci (the console's vendored libraries, from package-lock.json)"
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
fi
