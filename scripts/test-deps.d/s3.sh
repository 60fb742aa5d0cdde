#!/usr/bin/env bash
# Installs what the s3 destination's tests need on a fresh Debian machine: python3 with moto's S3 server and boto3
# (the independent client the tests read back with; moto brings `cryptography`, which the hostile S3 server of
# Tests/S3HostileServer uses for its self-signed certificate). Idempotent and quiet; exits 0 when everything is there.
set -euo pipefail

have_python_modules() {
    python3 -c 'import moto, moto.server, boto3, botocore, flask, werkzeug, cryptography' >/dev/null 2>&1
}

if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    SUDO=""
    if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
    $SUDO apt-get update -qq >/dev/null
    $SUDO apt-get install -y -qq python3 python3-pip >/dev/null
fi

if ! have_python_modules; then
    # Debian marks its python as externally managed; the tests use the user's python3 as is.
    python3 -m pip install --quiet --disable-pip-version-check 'moto[server]==5.2.1' boto3 \
        || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages 'moto[server]==5.2.1' boto3
fi

have_python_modules || { echo "s3 test deps: moto[server] / boto3 still not importable by python3" >&2; exit 1; }
exit 0
