#!/usr/bin/env bash
# What the build needs: zlib's header (the SDL code uses zlib's CRC-32).
# What the core's tests need: sqlite3 (to make a foreign database), setpriv (to test an unreadable file as root) and
# systemd-analyze (to verify the shipped systemd units).
set -euo pipefail
need=()
[ -e /usr/include/zlib.h ] || need+=(zlib1g-dev)
command -v sqlite3 >/dev/null 2>&1 || need+=(sqlite3)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "please install: ${need[*]}" >&2
    exit 1
  fi
fi
