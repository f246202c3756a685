#!/usr/bin/env bash
# ensure-vm-image.sh: the Linux image the VM engine (provider/vm) boots under
# KVM, built offline from Debian's packages and cached outside the clone.
#
#   bash scripts/ensure-vm-image.sh          # build once; quick when cached
#   bash scripts/ensure-vm-image.sh path     # print the image's directory
#
# The image is Debian bookworm (debootstrap, variant minbase, from Debian's
# mirror) with Debian's kernel, Docker's engine (docker.io) and an sshd, and
# busybox:latest (saved from the local engine, as scripts/ensure-busybox.sh
# builds it) to be loaded into the VM's engine at its first boot. It boots
# directly (qemu -kernel/-initrd, no boot loader) into a small init of its
# own (/sbin/litterbox-init, below) that starts sshd and dockerd and nothing
# else: the only thing listening on the VM's network is sshd, which takes
# one key, given by the host at boot through qemu's fw_cfg (never on the
# kernel command line, which every process of the VM can read).
#
# In $DIR ($CACHE/bookworm-v$RECIPE): vmlinuz, initrd.img, base.qcow2 (the
# root file system, 8 GiB, sparse), and manifest (what is in it). A change
# of the recipe below bumps RECIPE, so an image of another recipe is never
# mistaken for this one. Written aside and renamed into place: a build that
# dies leaves no half image.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

RECIPE=1
CACHE=${LITTERBOX_VM_CACHE:-${LITTERBOX_CACHE:-/var/cache/litterbox}/vm}
DIR=$CACHE/bookworm-v$RECIPE
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
IMAGE=${LITTERBOX_TEST_IMAGE:-busybox:latest}
PACKAGES="linux-image-amd64 docker.io openssh-server iproute2 iptables kmod procps e2fsprogs"

log() { printf 'ensure-vm-image: %s\n' "$*" >&2; }

case "${1:-build}" in
path)
  echo "$DIR"
  exit 0
  ;;
build) ;;
*)
  echo "usage: $0 [build|path]" >&2
  exit 2
  ;;
esac

if [ -s "$DIR/manifest" ] && [ -s "$DIR/base.qcow2" ] && [ -s "$DIR/vmlinuz" ] && [ -s "$DIR/initrd.img" ] &&
  command -v qemu-system-x86_64 >/dev/null && command -v socat >/dev/null; then
  log "image is there: $DIR"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  log "debootstrap needs root: run this as root"
  exit 1
fi
T0=$SECONDS
export DEBIAN_FRONTEND=noninteractive
need=""
command -v debootstrap >/dev/null 2>&1 || need="$need debootstrap"
command -v qemu-img >/dev/null 2>&1 || need="$need qemu-utils"
command -v qemu-system-x86_64 >/dev/null 2>&1 || need="$need qemu-system-x86"
command -v mkfs.ext4 >/dev/null 2>&1 || need="$need e2fsprogs"
# The VM's idle watcher suspends it through qemu's QMP socket with socat.
command -v socat >/dev/null 2>&1 || need="$need socat"
if [ -n "$need" ]; then
  log "installing$need"
  # shellcheck disable=SC2086 # a list of package names
  apt_install $need
fi
docker image inspect "$IMAGE" >/dev/null 2>&1 || bash "$(dirname "$0")/ensure-busybox.sh"

mkdir -p "$CACHE"
work=$(mktemp -d "$CACHE/work.XXXXXX")
root=$work/rootfs
cleanup() {
  for m in dev/pts dev proc sys; do mountpoint -q "$root/$m" 2>/dev/null && umount -l "$root/$m"; done
  rm -rf "$work"
}
trap cleanup EXIT

log "debootstrap bookworm (minbase) from $MIRROR into $work; a few minutes"
debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }

# The initramfs loads only what the VM's disk needs (no udev in the image,
# so nothing would load them otherwise), and is made for this list, not for
# the machine that builds it.
mkdir -p "$root/etc/initramfs-tools"
printf '%s\n' virtio_pci virtio_blk ext4 >>"$root/etc/initramfs-tools/modules"
mkdir -p "$root/etc/initramfs-tools/conf.d"
echo MODULES=list >"$root/etc/initramfs-tools/conf.d/litterbox"
# No service starts inside the chroot.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
log "installing $PACKAGES"
chroot "$root" apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends $PACKAGES >"$work/apt.log" 2>&1 ||
  { tail -n 30 "$work/apt.log" >&2; exit 1; }
for m in dev/pts dev proc sys; do umount -l "$root/$m"; done
rm -f "$root/usr/sbin/policy-rc.d"

kernel=$(cd "$root/boot" && ls vmlinuz-* | sort -V | tail -n 1)
kver=${kernel#vmlinuz-}
[ -s "$root/boot/initrd.img-$kver" ] || { log "no initramfs for $kver was made"; exit 1; }

# The VM's own init: mounts, the network (qemu's user-mode network: the VM
# is 10.0.2.15, the host's loopback 10.0.2.2, its DNS 10.0.2.3), the keys
# the host gives it, sshd, dockerd, the images to load; on SIGTERM (sent
# by litterbox-poweroff) it stops dockerd, which stops the containers, and
# powers off.
cat >"$root/sbin/litterbox-init" <<'INIT'
#!/bin/sh
# PID 1 is tini (litterbox-boot: it reaps orphans); this is its child.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
say() { echo "litterbox-init: $*" >/dev/console; }
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sys /sys
mountpoint -q /dev || mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm
mount -t tmpfs -o mode=755,nosuid,nodev run /run
mount -t tmpfs -o mode=1777,nosuid,nodev tmp /tmp
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
mount -o remount,rw /
hostname litterbox-vm
for m in virtio_net qemu_fw_cfg overlay br_netfilter veth bridge ip_tables iptable_nat iptable_filter nf_nat xt_conntrack xt_MASQUERADE xt_addrtype; do
  modprobe "$m" 2>/dev/null
done
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
echo "nameserver 10.0.2.3" >/etc/resolv.conf
sysctl -qw net.ipv4.ip_forward=1
# The keys: the host's public key for root, and this VM's host key.
fw=/sys/firmware/qemu_fw_cfg/by_name/opt/dev.litterbox
install -d -m 700 /root/.ssh
cat "$fw/authorized_keys/raw" >/root/.ssh/authorized_keys
chmod 600 /root/.ssh/authorized_keys
umask 077
cat "$fw/host_key/raw" >/etc/ssh/ssh_host_ed25519_key
umask 022
# Only the host reaches sshd: what comes in through qemu's network, not a
# container of the VM's engine (their bridges are other interfaces).
iptables -A INPUT -i lo -j ACCEPT
iptables -A INPUT -i eth0 -p tcp --dport 22 -j ACCEPT
iptables -A INPUT -p tcp --dport 22 -j DROP
mkdir -p /run/sshd
/usr/sbin/sshd -f /etc/ssh/sshd_config -E /var/log/sshd.log
dockerd >/var/log/dockerd.log 2>&1 &
dockerd=$!
stop() {
  say "stopping"
  kill -TERM "$dockerd" 2>/dev/null
  wait "$dockerd"
  sync
  mount -o remount,ro / 2>/dev/null
  echo o >/proc/sysrq-trigger
}
trap stop TERM INT
i=0
until docker version >/dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -lt 600 ] || { say "dockerd did not answer"; break; }
  sleep 0.1
done
# Containers reach the outside through qemu, never the host's own loopback
# (which qemu's 10.0.2.2 is).
iptables -I DOCKER-USER -d 10.0.2.2 -j DROP 2>/dev/null
for f in /var/lib/litterbox/images/*.tar; do
  [ -e "$f" ] || continue
  docker load -q -i "$f" >/dev/null && rm -f "$f"
done
touch /run/litterbox-ready
say "ready"
while kill -0 "$dockerd" 2>/dev/null; do
  wait "$dockerd"
done
say "dockerd exited"
stop
INIT
chmod 755 "$root/sbin/litterbox-init"
printf '#!/bin/sh\nexec /usr/bin/tini -g -- /sbin/litterbox-init\n' >"$root/sbin/litterbox-boot"
chmod 755 "$root/sbin/litterbox-boot"
cat >"$root/usr/local/sbin/litterbox-poweroff" <<'OFF'
#!/bin/sh
# Stop the VM cleanly: litterbox-init stops dockerd, then powers off.
kill -TERM "$(pgrep -f -o /sbin/litterbox-init)"
OFF
chmod 755 "$root/usr/local/sbin/litterbox-poweroff"

cat >"$root/etc/ssh/sshd_config" <<'SSHD'
# Written by litterbox's scripts/ensure-vm-image.sh: one key, root, no
# passwords; the host key comes from the host at boot.
Port 22
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
UsePAM no
X11Forwarding no
PrintMotd no
AllowStreamLocalForwarding yes
AllowTcpForwarding yes
MaxSessions 100
MaxStartups 100:30:200
SSHD
rm -f "$root"/etc/ssh/ssh_host_*
mkdir -p "$root/etc/docker"
cat >"$root/etc/docker/daemon.json" <<'JSON'
{
  "default-address-pools": [{"base": "10.213.0.0/16", "size": 26}]
}
JSON
echo litterbox-vm >"$root/etc/hostname"
printf '127.0.0.1 localhost litterbox-vm\n' >"$root/etc/hosts"
mkdir -p "$root/var/lib/litterbox/images"
docker save "$IMAGE" >"$root/var/lib/litterbox/images/busybox.tar"

mkdir -p "$work/out"
cp "$root/boot/vmlinuz-$kver" "$work/out/vmlinuz"
cp "$root/boot/initrd.img-$kver" "$work/out/initrd.img"
# What the VM never reads.
rm -rf "$root/boot/"* "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"* \
  "$root/usr/share/doc/"* "$root/usr/share/man/"* "$root/usr/share/locale/"*
docker_version=$(chroot "$root" dpkg-query -W -f '${Version}' docker.io)
log "making the root file system"
truncate -s 8G "$work/rootfs.img"
mkfs.ext4 -q -L litterbox-root -d "$root" "$work/rootfs.img"
qemu-img convert -O qcow2 "$work/rootfs.img" "$work/out/base.qcow2"
rm -f "$work/rootfs.img"
cat >"$work/out/manifest" <<EOF
recipe $RECIPE
debian bookworm
kernel $kver
docker.io $docker_version
images $IMAGE
cmdline console=ttyS0 root=/dev/vda rw panic=-1 init=/sbin/litterbox-boot
EOF
rm -rf "$DIR"
mv "$work/out" "$DIR"
log "built $DIR (kernel $kver, docker.io $docker_version) in $((SECONDS - T0)) s"
