# Sourced by scripts/install and scripts/release: exports what `syncgate --version` names, unless the caller set it:
# SYNCGATE_COMMIT (the short commit, with -dirty when the tree has uncommitted changes) and SYNCGATE_BUILD_DATE
# (SOURCE_DATE_EPOCH's day for a reproducible build, else today). Package.swift reads both (docs/cli.md).
if [ -z "${SYNCGATE_COMMIT:-}" ] && commit="$(git rev-parse --short=7 HEAD 2>/dev/null)"; then
  git diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
  SYNCGATE_COMMIT="$commit"
fi
export SYNCGATE_COMMIT="${SYNCGATE_COMMIT:-}"
export SYNCGATE_BUILD_DATE="${SYNCGATE_BUILD_DATE:-$(date -u ${SOURCE_DATE_EPOCH:+-d @$SOURCE_DATE_EPOCH} +%Y-%m-%d)}"
