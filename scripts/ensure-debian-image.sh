#!/usr/bin/env bash
# ensure-debian-image.sh: a real Debian userland as a Docker image, offline:
# debootstrap (variant minbase) of bookworm from Debian's mirror, with
# python3, imported as $DEBIAN_IMAGE. Tests use it as a sandbox image with a
# real toolchain.
#
#   bash scripts/ensure-debian-image.sh     # idempotent; quick when all is there
#
# debootstrap takes about 4 minutes here; its result is cached as a tarball in
# $CACHE, outside the clone, so a second machine state (or a rerun after the
# image was removed) only imports it.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

DEBIAN_IMAGE=${DEBIAN_IMAGE:-litterbox-test/debian-python:bookworm}
CACHE=${LITTERBOX_CACHE:-/var/cache/litterbox}/debian
TARBALL=$CACHE/bookworm-minbase-python3.tar
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

log() { printf 'ensure-debian-image: %s\n' "$*" >&2; }

if docker image inspect "$DEBIAN_IMAGE" >/dev/null 2>&1; then
  log "$DEBIAN_IMAGE is there"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  log "debootstrap needs root: run this as root"
  exit 1
fi
mkdir -p "$CACHE"
if [ ! -s "$TARBALL" ]; then
  export DEBIAN_FRONTEND=noninteractive
  command -v debootstrap >/dev/null 2>&1 || apt_install debootstrap
  work=$(mktemp -d "$CACHE/work.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  log "debootstrap bookworm (minbase + python3) from $MIRROR; this takes a few minutes"
  debootstrap --variant=minbase --include=python3 bookworm "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  # Package caches and lists are of no use in a sandbox image.
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
  tar -C "$work/rootfs" --numeric-owner -cf "$TARBALL.tmp" .
  mv "$TARBALL.tmp" "$TARBALL"
fi
docker import -c 'CMD ["bash"]' -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  "$TARBALL" "$DEBIAN_IMAGE" >/dev/null
log "imported $DEBIAN_IMAGE from $TARBALL"
