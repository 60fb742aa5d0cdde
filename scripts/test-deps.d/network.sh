#!/usr/bin/env bash
# Test dependencies of the proxy and TLS tests (docs/network.md; Tests/*/...Proxy*, ...TLS*): Debian's squid (an
# HTTP proxy whose hosts_file makes a test host name reachable only through it), nginx (TLS in front of the test
# servers) and openssl (makes the throwaway CA and server certificate each test uses). The tests start their own
# instances on loopback ports in temporary folders, never the system services. Idempotent and quiet.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != "0" ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi

have() { [ -x "/usr/sbin/$1" ] || command -v "$1" >/dev/null 2>&1; }

need=()
have squid || need+=(squid)
have nginx || need+=(nginx-light)
have openssl || need+=(openssl)
if [ ${#need[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    log="$(mktemp)"
    if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"; } >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        exit 1
    fi
    rm -f "$log"
fi
for tool in squid nginx openssl; do
    have "$tool" || { echo "network test deps: $tool is still missing" >&2; exit 1; }
done
# squid's basic_ncsa_auth helper checks the proxy password of the authentication test.
[ -x /usr/lib/squid/basic_ncsa_auth ] || { echo "network test deps: /usr/lib/squid/basic_ncsa_auth is missing" >&2; exit 1; }
exit 0
