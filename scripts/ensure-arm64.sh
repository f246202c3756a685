#!/usr/bin/env bash
# ensure-arm64.sh: run linux/arm64 containers on this amd64 Docker engine,
# offline: qemu-user-static's binfmt handler, and an arm64 busybox image made
# from Debian's busybox-static for arm64.
#
#   bash scripts/ensure-arm64.sh     # idempotent; quick when all is there
#
# The image is $ARM64_IMAGE (litterbox-test/busybox:arm64), with the image
# metadata saying linux/arm64, so the engine reports the platform truthfully.
# The handler is registered with the F flag (the interpreter is opened once,
# at registration), so it works inside containers' mount namespaces.
# The .deb is cached in $CACHE, outside the clone.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

ARM64_IMAGE=${ARM64_IMAGE:-litterbox-test/busybox:arm64}
CACHE=${LITTERBOX_CACHE:-/var/cache/litterbox}/arm64
BINFMT=/proc/sys/fs/binfmt_misc

log() { printf 'ensure-arm64: %s\n' "$*" >&2; }

if [ "$(id -u)" != 0 ]; then
  log "registering a binfmt handler needs root: run this as root"
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive

# 1. The binfmt handler.
[ -e "$BINFMT/register" ] || mount -t binfmt_misc binfmt_misc "$BINFMT"
if [ ! -x /usr/libexec/qemu-binfmt/aarch64-binfmt-P ]; then
  log "installing Debian's qemu-user-static"
  apt_install qemu-user-static
fi
if [ ! -e "$BINFMT/qemu-aarch64" ]; then
  # Without systemd nobody reads /usr/lib/binfmt.d: register by hand.
  grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf >"$BINFMT/register"
  log "registered the qemu-aarch64 binfmt handler"
fi

# 2. The image.
if docker image inspect "$ARM64_IMAGE" >/dev/null 2>&1; then
  log "$ARM64_IMAGE is there"
  exit 0
fi
mkdir -p "$CACHE"
deb=$(ls "$CACHE"/busybox-static_*_arm64.deb 2>/dev/null | head -n 1 || true)
if [ -z "$deb" ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg_locked --add-architecture arm64
  fi
  (cd "$CACHE" && { apt_get download busybox-static:arm64 >/dev/null 2>&1 ||
    { apt_get update -qq && apt_get download busybox-static:arm64 >/dev/null; }; })
  deb=$(ls "$CACHE"/busybox-static_*_arm64.deb | head -n 1)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dpkg -x "$deb" "$work/x"
root=$work/root
mkdir -p "$root/bin" "$root/etc" "$root/tmp"
cp "$work/x/bin/busybox" "$root/bin/busybox"
# One link per applet; the applet named busybox would overwrite the binary.
for a in $("$root/bin/busybox" --list); do
  [ "$a" = busybox ] || ln -s busybox "$root/bin/$a"
done
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
chmod 1777 "$root/tmp"

# A docker-save archive, so the image's metadata says arm64 (docker import
# on this engine ignores --platform and records amd64).
img=$work/img
mkdir -p "$img"
tar -C "$root" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$img/layer.tar" .
layer=$(sha256sum "$img/layer.tar" | cut -d' ' -f1)
printf '{"architecture":"arm64","os":"linux","config":{"Env":["PATH=/usr/sbin:/usr/bin:/sbin:/bin"],"Cmd":["sh"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
  "$layer" >"$img/config.json"
cfg=$(sha256sum "$img/config.json" | cut -d' ' -f1)
mv "$img/config.json" "$img/$cfg.json"
printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' "$cfg" "$ARM64_IMAGE" >"$img/manifest.json"
tar -C "$img" -c . | docker load >/dev/null
log "loaded $ARM64_IMAGE ($(docker image inspect -f '{{.Os}}/{{.Architecture}}' "$ARM64_IMAGE"))"
