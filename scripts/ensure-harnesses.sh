#!/usr/bin/env bash
# ensure-harnesses.sh: the agent harnesses the harness_*.txtar scripts drive
# (Claude Code, Codex, Gemini CLI, opencode), each its released npm package at
# a pinned version, unpacked in a cache outside the clone:
# $CACHE/<name>-<version>/.
#
#   bash scripts/ensure-harnesses.sh        # fetch what is missing; quick when all is there
#   bash scripts/ensure-harnesses.sh env    # print NAME=PATH of each cached harness's executable
#
# The versions are pinned below, in one place, and changed on purpose: a new
# release may change what a harness shows the model, which is what the tests
# are about. Each package is fetched with `npm pack` (no install scripts run)
# into a temporary directory beside its final one and renamed into place, so
# an interrupted fetch leaves nothing that looks complete.
set -euo pipefail

CACHE=${LITTERBOX_HARNESS_CACHE:-${LITTERBOX_CACHE:-/var/cache/litterbox}/harnesses}

# name version package executable (inside the package). The native binaries
# are in platform packages: Claude Code's and opencode's under their own
# names, Codex's under its main name with a version suffix. Gemini CLI is one
# bundled script run by node.
HARNESSES=(
  "claude   2.1.332 @anthropic-ai/claude-code-linux-x64@2.1.332 claude"
  "codex    0.169.0 @openai/codex@0.169.0-linux-x64            vendor/x86_64-unknown-linux-musl/bin/codex"
  "gemini   0.61.0  @google/gemini-cli@0.61.0                  bundle/gemini.js"
  "opencode 1.18.33 opencode-linux-x64@1.18.33                 bin/opencode"
)

log() { printf 'ensure-harnesses: %s\n' "$*" >&2; }

# tmp is the download under way, removed if the script stops before it is
# renamed into place (on a signal too: it makes the script exit, which runs
# the EXIT trap).
tmp=
trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

# fetch NAME VERSION PACKAGE EXE unpacks PACKAGE into $CACHE/NAME-VERSION
# unless it is there. npm's own cache is a throwaway one: the package is
# kept unpacked, and once is enough.
fetch() {
  local dir=$CACHE/$1-$2
  if [ -x "$dir/$4" ]; then
    log "$1 $2 is there"
    return
  fi
  mkdir -p "$CACHE"
  tmp=$(mktemp -d "$CACHE/.$1-$2.XXXXXX")
  log "fetching $3"
  if ! (cd "$tmp" && npm pack --silent --cache "$tmp/.npm" "$3" >pack.out && tar -xzf "$(tail -n 1 pack.out)"); then
    log "npm pack $3 failed"
    rm -rf "$tmp"; tmp=
    return 1
  fi
  if [ ! -x "$tmp/package/$4" ]; then
    log "$3 holds no executable $4"
    rm -rf "$tmp"; tmp=
    return 1
  fi
  rm -rf "$dir"
  mv "$tmp/package" "$dir"
  rm -rf "$tmp"
  tmp=
  log "$1 $2 is in $dir"
}

if [ "${1:-}" = env ]; then
  for h in "${HARNESSES[@]}"; do
    read -r name version _ exe <<<"$h"
    [ ! -x "$CACHE/$name-$version/$exe" ] || echo "$name=$CACHE/$name-$version/$exe"
  done
  exit 0
fi

command -v npm >/dev/null || { log "npm is missing: install Node.js 20 or later"; exit 1; }
status=0
for h in "${HARNESSES[@]}"; do
  read -r name version pkg exe <<<"$h"
  fetch "$name" "$version" "$pkg" "$exe" || status=1
done
exit "$status"
