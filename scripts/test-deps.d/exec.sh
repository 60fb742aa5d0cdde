#!/usr/bin/env bash
# External plugin tests (issue 16): the folder reference plugin is bash with jq; the others are Python 3.
set -euo pipefail
if ! command -v jq >/dev/null; then
  echo "installing jq"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null
  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null; fi
fi
command -v python3 >/dev/null || { echo "python3 is needed by the plugin tests" >&2; exit 1; }
