#!/usr/bin/env bash
# Test dependencies of the sheets destination: python3 with `cryptography` for the loopback Sheets server
# (Tests/SheetsServer/sheets_server.py). Idempotent and quiet; exits 0 when already installed.
set -euo pipefail

have() { command -v python3 >/dev/null 2>&1 && python3 -c 'import cryptography' >/dev/null 2>&1; }
have && exit 0

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

if command -v apt-get >/dev/null 2>&1; then
    $SUDO apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3 python3-cryptography >/dev/null 2>&1 || true
fi
have && exit 0

# Fall back to pip (Debian marks the system Python as externally managed).
if command -v python3 >/dev/null 2>&1; then
    python3 -m pip install --quiet --user cryptography >/dev/null 2>&1 \
        || python3 -m pip install --quiet --user --break-system-packages cryptography >/dev/null 2>&1 || true
fi
have || { echo "sheets: could not install python3 with the cryptography module" >&2; exit 1; }
