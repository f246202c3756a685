#!/usr/bin/env bash
# clean-test-leftovers.sh: remove the containers and networks the test suite
# made, found by the label key dev.litterbox.test (any value), and nothing
# else. Each testscript removes its own when it ends; this catches what an
# interrupted run left. Idempotent: with nothing to remove it does nothing.
#
# Usage: clean-test-leftovers.sh [VALUE]
# With VALUE, only resources labelled dev.litterbox.test=VALUE go: use that on
# a machine where other test runs or benchmarks are in flight, since without
# it their resources are removed too.
set -euo pipefail

key=dev.litterbox.test
if [ $# -gt 0 ]; then
  key="$key=$1"
fi
log() { printf 'clean-test-leftovers: %s\n' "$*" >&2; }

if ! docker info >/dev/null 2>&1; then
  log "no Docker engine answers; nothing to clean"
  exit 0
fi

mapfile -t containers < <(docker ps --all --quiet --filter "label=$key")
if [ "${#containers[@]}" -gt 0 ]; then
  docker rm --force --volumes "${containers[@]}" >/dev/null
fi
mapfile -t networks < <(docker network ls --quiet --filter "label=$key")
if [ "${#networks[@]}" -gt 0 ]; then
  docker network rm "${networks[@]}" >/dev/null
fi
mapfile -t volumes < <(docker volume ls --quiet --filter "label=$key")
if [ "${#volumes[@]}" -gt 0 ]; then
  docker volume rm --force "${volumes[@]}" >/dev/null
fi
log "removed ${#containers[@]} container(s), ${#networks[@]} network(s), ${#volumes[@]} volume(s) labelled $key"
