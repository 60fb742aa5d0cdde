#!/usr/bin/env bash
# Test dependencies of the status page and API (Tests/SyncgateHTTPTests): Debian's headless chromium (the page is
# loaded and clicked in a real browser through its DevTools protocol), and python3 with prometheus_client (its
# text parser reads /metrics) and websocket-client (talks to chromium's DevTools websocket). Idempotent and quiet;
# exits 0 when everything is there.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

have_browser() { command -v chromium >/dev/null 2>&1; }
have_python() { command -v python3 >/dev/null 2>&1 && python3 -c 'import prometheus_client, websocket' >/dev/null 2>&1; }

need=()
have_browser || need+=(chromium fonts-dejavu-core)
command -v python3 >/dev/null 2>&1 || need+=(python3 python3-pip)
if [ ${#need[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq >/dev/null
    $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if ! have_python; then
    # Debian marks its python as externally managed; the tests use the user's python3 as is.
    python3 -m pip install --quiet --disable-pip-version-check 'prometheus_client>=0.20' 'websocket-client>=1.6' \
        || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages 'prometheus_client>=0.20' 'websocket-client>=1.6'
fi

have_browser || { echo "http test deps: chromium is still missing" >&2; exit 1; }
have_python || { echo "http test deps: prometheus_client / websocket-client still not importable by python3" >&2; exit 1; }
exit 0
