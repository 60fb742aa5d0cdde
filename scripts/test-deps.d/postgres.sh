#!/usr/bin/env bash
# Test dependencies of the PostgreSQL ledger (docs/state.md; Tests/SyncgateTestSupport/PostgresTestServer.swift):
# Debian's PostgreSQL server binaries (initdb, postgres) and psql, and faketime for the fleet's chaos tests. The tests run initdb into a temporary folder and
# start their own postgres on a loopback port, never the system service (which this script leaves stopped, as the
# package installs it). Idempotent and quiet.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

# Where the tests look for the server binaries: PATH, /usr/local/bin, Debian's /usr/lib/postgresql/<version>/bin.
have_server() {
    local dir
    for dir in $(echo "$PATH" | tr ':' ' ') /usr/local/bin /usr/lib/postgresql/*/bin; do
        [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ] && return 0
    done
    return 1
}
have_psql() {
    local dir
    for dir in $(echo "$PATH" | tr ':' ' ') /usr/local/bin /usr/lib/postgresql/*/bin; do
        [ -x "$dir/psql" ] && return 0
    done
    return 1
}

# Installs Debian packages quietly, printing apt's output only when it fails.
apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    local log
    log="$(mktemp)"
    if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "$@"; } >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        exit 1
    fi
    rm -f "$log"
}

if ! have_server || ! have_psql; then
    apt_install postgresql
fi
have_server || { echo "postgres test deps: initdb and postgres are still missing" >&2; exit 1; }
have_psql || { echo "postgres test deps: psql is still missing" >&2; exit 1; }
# The fleet's chaos tests run one instance with its clock two minutes ahead: libfaketime's `faketime`.
if ! command -v faketime >/dev/null 2>&1; then
    apt_install faketime
fi
# postgres refuses to run as root: the tests then run it as nobody through setpriv (util-linux).
if [ "$(id -u)" = "0" ] && ! command -v setpriv >/dev/null 2>&1; then
    echo "postgres test deps: setpriv (util-linux) is needed to run postgres as nobody when the tests run as root" >&2
    exit 1
fi
exit 0
