#!/usr/bin/env bash
# ensure-go-image.sh: the Debian image of ensure-debian-image.sh with Go, as
# $GO_IMAGE, offline: the host's Go toolchain (the tree at `go env GOROOT`)
# is copied in. The cache_go test runs `go mod download` in it, twice, through
# the shared Go module cache ([cache] use = ["go"]), and the go-cache bench row
# times it.
#
#   bash scripts/ensure-go-image.sh     # idempotent; quick when all is there
set -euo pipefail

BASE=${DEBIAN_IMAGE:-litterbox-test/debian-python:bookworm}
GO_IMAGE=${GO_IMAGE:-litterbox-test/go:bookworm}

log() { printf 'ensure-go-image: %s\n' "$*" >&2; }

if docker image inspect "$GO_IMAGE" >/dev/null 2>&1; then
  log "$GO_IMAGE is there"
  exit 0
fi
if ! command -v go >/dev/null; then
  log "the host has no go to copy in: install Go (go.dev/dl), or use a public image such as golang:1-bookworm"
  exit 1
fi
goroot=$(go env GOROOT)
bash "$(dirname "$0")/ensure-debian-image.sh"
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
# The toolchain without its tests and sources of tests: what go build and
# go mod download need.
mkdir "$ctx/go"
tar -C "$goroot" --exclude='./test' --exclude='./api' --exclude='./doc' --exclude='./misc' -cf - . | tar -C "$ctx/go" -xf -
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $BASE
COPY go /usr/local/go
ENV PATH=/usr/local/go/bin:\$PATH GOTOOLCHAIN=local
RUN go version
DOCKERFILE
docker build -q -t "$GO_IMAGE" "$ctx" >/dev/null
log "built $GO_IMAGE: $(docker run --rm "$GO_IMAGE" go version) from $goroot"
