#!/usr/bin/env bash
# ensure-debian-tools-image.sh: the Debian image of ensure-debian-image.sh
# with the clients agents use over https: curl, git, python3-requests and
# ca-certificates (so the image has roots of its own, which the sandbox's
# CA bundle keeps beside the gateway's CA). The secrets tests of package
# egress run them against their own internet.
#
#   bash scripts/ensure-debian-tools-image.sh     # idempotent; quick when all is there
#
# It needs deb.debian.org (apt-get in a docker build) the first time; the
# image is then kept as a tarball in $CACHE, outside the clone, and a later
# machine state only loads it.
set -euo pipefail

BASE=${DEBIAN_IMAGE:-litterbox-test/debian-python:bookworm}
TOOLS_IMAGE=${DEBIAN_TOOLS_IMAGE:-litterbox-test/debian-tools:bookworm}

CACHE=${LITTERBOX_CACHE:-/var/cache/litterbox}/debian
TARBALL=$CACHE/debian-tools-bookworm.tar

log() { printf 'ensure-debian-tools-image: %s\n' "$*" >&2; }

if docker image inspect "$TOOLS_IMAGE" >/dev/null 2>&1; then
  log "$TOOLS_IMAGE is there"
  exit 0
fi
if [ -s "$TARBALL" ] && docker load -q -i "$TARBALL" >/dev/null 2>&1 &&
  docker image inspect "$TOOLS_IMAGE" >/dev/null 2>&1; then
  log "loaded $TOOLS_IMAGE from $TARBALL"
  exit 0
fi
bash "$(dirname "$0")/ensure-debian-image.sh"
log "installing curl, git, ca-certificates and python3-requests into $TOOLS_IMAGE (in its own build)"
docker build -q -t "$TOOLS_IMAGE" - >/dev/null <<DOCKERFILE
FROM $BASE
RUN apt-get -o DPkg::Lock::Timeout=900 update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends curl git ca-certificates python3-requests >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
DOCKERFILE
mkdir -p "$CACHE"
docker save -o "$TARBALL.tmp" "$TOOLS_IMAGE" && mv "$TARBALL.tmp" "$TARBALL"
log "built $TOOLS_IMAGE (kept in $TARBALL)"
