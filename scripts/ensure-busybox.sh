#!/usr/bin/env bash
# ensure-busybox.sh: make the image busybox:latest available to the engine.
#
# Idempotent: when the image is present it does nothing. Otherwise it tries
# `docker pull`, and when no registry answers it builds the image from Debian's
# busybox-static (installed with apt-get when missing).
set -euo pipefail

image=busybox:latest
log() { printf 'ensure-busybox: %s\n' "$*" >&2; }

if docker image inspect "$image" >/dev/null 2>&1; then
  log "$image already present"
  exit 0
fi

if timeout 20 docker pull -q "$image" >/dev/null 2>&1; then
  log "pulled $image"
  exit 0
fi
log "cannot pull $image; building it from Debian's busybox-static"

# Debian's busybox-static ships a static /bin/busybox; a dynamic one would not
# run inside the image, which has no libc.
bin=/bin/busybox
if ! dpkg -s busybox-static >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    log "busybox-static is missing and this is not root: install it, then run this again"
    exit 1
  fi
  . "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
  apt_install busybox-static
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/root" "$root/usr/bin" "$root/usr/sbin" "$root/sbin"
chmod 1777 "$root/tmp"
cp "$bin" "$root/bin/busybox"
for applet in $("$bin" --list); do
  # An applet named busybox would replace the binary with a link to itself.
  [ "$applet" = busybox ] && continue
  [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"
done
cat >"$root/etc/passwd" <<'PW'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/home:/bin/false
PW
cat >"$root/etc/group" <<'GR'
root:x:0:
nogroup:x:65534:
GR
tar -C "$root" -c . | docker import \
  -c 'CMD ["sh"]' \
  -c 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' \
  - "$image" >/dev/null
log "built $image from $bin"
