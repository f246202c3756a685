#!/usr/bin/env bash
# bench.sh: print Litterbox's benchmark table (docs/bench.md).
#
# Builds litterbox into a temp dir, then runs the benchmark program, which
# generates synthetic repositories, times each case against its floor (the
# bare docker/git commands, measured in the same run) and prints a table.
# Arguments are passed to the program: -n 7, -json, -only create,pause,...
# Everything it makes carries the label dev.litterbox.test=bench-<pid> (or
# LITTERBOX_LABELS when set) and is removed at the end.
set -euo pipefail

cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! docker info >/dev/null 2>&1; then
  echo "bench: Docker is not running: run scripts/ensure-docker.sh first" >&2
  exit 1
fi
# Static, like `make build`: snapshots copy litterbox into the busybox sandbox.
CGO_ENABLED=0 go build -o "$tmp/litterbox" .
go build -o "$tmp/bench" ./cmd/bench
export LITTERBOX_LABELS="${LITTERBOX_LABELS:-dev.litterbox.test=bench-$$}"
"$tmp/bench" -bin "$tmp/litterbox" "$@"
