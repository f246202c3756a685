#!/usr/bin/env bash
# ensure-node-image.sh: the Debian image of ensure-debian-image.sh with
# node 20 or later, which Gemini CLI needs (bookworm's own nodejs is 18), as
# $NODE_IMAGE, offline: the host's node (a Debian build for the same
# bookworm libraries: nodesource's nodejs package) is copied in. The
# run_gemini test runs `litterbox run gemini` in it.
#
#   bash scripts/ensure-node-image.sh     # idempotent; quick when all is there
set -euo pipefail

BASE=${DEBIAN_IMAGE:-litterbox-test/debian-python:bookworm}
NODE_IMAGE=${NODE_IMAGE:-litterbox-test/node:bookworm}

log() { printf 'ensure-node-image: %s\n' "$*" >&2; }

if docker image inspect "$NODE_IMAGE" >/dev/null 2>&1; then
  log "$NODE_IMAGE is there"
  exit 0
fi
node=$(command -v node || true)
major=$([ -n "$node" ] && "$node" -p 'process.versions.node.split(".")[0]' || echo 0)
if [ "$major" -lt 20 ]; then
  log "the host has no node 20 or later to copy in (${node:-no node}: major $major): install nodesource's nodejs 20+ (Debian bookworm), or use a public image such as node:22-bookworm-slim"
  exit 1
fi
bash "$(dirname "$0")/ensure-debian-image.sh"
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$(readlink -f "$node")" "$ctx/node"
cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $BASE
COPY node /usr/local/bin/node
RUN node --version
DOCKERFILE
docker build -q -t "$NODE_IMAGE" "$ctx" >/dev/null
log "built $NODE_IMAGE: $(docker run --rm "$NODE_IMAGE" node --version) from $node"
