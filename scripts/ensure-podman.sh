#!/usr/bin/env bash
# ensure-podman.sh: make a rootful Podman service answer Docker's API on a unix
# socket, offline, without disturbing the Docker engine.
#
#   bash scripts/ensure-podman.sh          # start (idempotent; quick when up)
#   bash scripts/ensure-podman.sh env      # print CONTAINER_HOST=... for eval
#   bash scripts/ensure-podman.sh down     # stop it and remove its namespace
#
# It installs Debian's podman and catatonit when missing, writes a
# containers.conf with what this machine kind needs (see
# ../shared/notes/engines.md: runc, cgroupfs, ulimits within the hard limits,
# file events, a short exit_command_delay), loads busybox:latest from the
# Docker engine, and serves the API at $PODMAN_SOCK.
#
# The service runs in its own network namespace: Podman's CNI firewall rules
# accept everything a podman container sends, which on the shared host would
# let a podman sandbox reach docker sandboxes. Inside the namespace its rules
# and bridges stay its own. Published ports are therefore on the namespace's
# 127.0.0.1; reach them with `nsenter --net=/run/netns/$PODMAN_NETNS`.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

PODMAN_DIR=${PODMAN_DIR:-/run/litterbox-podman}
PODMAN_SOCK=$PODMAN_DIR/podman.sock
PODMAN_NETNS=${PODMAN_NETNS:-litterbox-podman}
CONF=$PODMAN_DIR/containers.conf
PIDFILE=$PODMAN_DIR/service.pid
LOG=$PODMAN_DIR/service.log
IMAGE=${LITTERBOX_TEST_IMAGE:-busybox:latest}

log() { printf 'ensure-podman: %s\n' "$*" >&2; }
api() { DOCKER_HOST=unix://$PODMAN_SOCK docker "$@"; }
alive() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

case "${1:-up}" in
env)
  echo "CONTAINER_HOST=unix://$PODMAN_SOCK"
  exit 0
  ;;
down)
  if alive; then kill "$(cat "$PIDFILE")"; fi
  rm -f "$PIDFILE"
  if [ -e "/run/netns/$PODMAN_NETNS" ]; then
    # Containers die with their namespace's processes; stop them first so
    # conmon does not linger.
    CONTAINERS_CONF=$CONF nsenter --net="/run/netns/$PODMAN_NETNS" podman rm -af -t 0 >/dev/null 2>&1 || true
    ip netns delete "$PODMAN_NETNS"
  fi
  log "stopped"
  exit 0
  ;;
up) ;;
*)
  echo "usage: $0 [up|env|down]" >&2
  exit 2
  ;;
esac

if [ "$(id -u)" != 0 ]; then
  log "rootful Podman needs root: run this as root"
  exit 1
fi

if ! command -v podman >/dev/null 2>&1 || ! command -v catatonit >/dev/null 2>&1; then
  log "installing Debian's podman and catatonit"
  apt_install podman catatonit
fi
# Debian's package enables a podman.socket unit; with no systemd running here
# it is inert, and this service uses its own socket either way.

mkdir -p "$PODMAN_DIR"
hard_nofile=$(ulimit -Hn)
[ "$hard_nofile" = unlimited ] && hard_nofile=1048576
nofile=$((hard_nofile < 20000 ? hard_nofile : 20000))
# gVisor's runsc, when scripts/ensure-gvisor.sh has built it: a runtime by
# name, as `--runtime runsc` asks for it through the API.
runsc=$(bash "$(dirname "$0")/ensure-gvisor.sh" path)
runtimes=""
[ -x "$runsc" ] && runtimes="[engine.runtimes]
runsc = [\"$runsc\"]"
cat >"$CONF.new" <<EOF
# Written by litterbox's scripts/ensure-podman.sh.
[containers]
# Rootful Podman asks for nofile 1048576; without CAP_SYS_RESOURCE that fails.
default_ulimits = ["nofile=$nofile:$nofile", "nproc=32768:32768"]
[engine]
# crun refuses cgroups in hybrid mode; catatonit is the --init binary.
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
# Otherwise every exec through the API leaves two conmon processes for 300 s.
exit_command_delay = 5
$runtimes
EOF
# The service reads its configuration when it starts: one that answers with
# this configuration is left alone; one with another is restarted (its
# containers live on, each under its conmon).
if alive && api version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  if cmp -s "$CONF.new" "$CONF"; then
    rm -f "$CONF.new"
    log "service already answers at $PODMAN_SOCK"
    exit 0
  fi
  log "restarting the service: its configuration changed"
  kill "$(cat "$PIDFILE")"
  for _ in $(seq 1 50); do alive || break; sleep 0.1; done
fi
mv "$CONF.new" "$CONF"

if [ ! -e "/run/netns/$PODMAN_NETNS" ]; then
  ip netns add "$PODMAN_NETNS"
  ip -n "$PODMAN_NETNS" link set lo up
  log "made network namespace $PODMAN_NETNS"
fi

rm -f "$PODMAN_SOCK"
# nsenter --net keeps the host's mount namespace (ip netns exec would not),
# so the socket and container mounts are visible to everyone.
# From /: the service outlives this script, and conmon, which every
# container's start runs from the service's directory, fails ("Failed to get
# working directory") once that is gone, such as a CI clone removed later.
(cd / && CONTAINERS_CONF=$CONF exec setsid nsenter --net="/run/netns/$PODMAN_NETNS" \
  podman system service --time=0 "unix://$PODMAN_SOCK" >>"$LOG" 2>&1 </dev/null) &
echo $! >"$PIDFILE"

for _ in $(seq 1 100); do
  api version --format '{{.Server.Version}}' >/dev/null 2>&1 && break
  sleep 0.1
done
if ! api version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  log "the service did not answer within 10 s; see $LOG"
  tail -n 20 "$LOG" >&2 || true
  exit 1
fi

# The image comes from the Docker engine (no registry here). Podman names a
# loaded image localhost/NAME; tag it with Docker's full name too, so
# "busybox:latest" resolves the same on both engines.
if ! api image inspect "$IMAGE" >/dev/null 2>&1; then
  docker image inspect "$IMAGE" >/dev/null 2>&1 || bash "$(dirname "$0")/ensure-busybox.sh"
  docker save "$IMAGE" | api load >/dev/null
  api tag "localhost/$IMAGE" "docker.io/library/$IMAGE" 2>/dev/null || true
fi
log "service answers at $PODMAN_SOCK (CONTAINER_HOST=unix://$PODMAN_SOCK; namespace $PODMAN_NETNS)"
