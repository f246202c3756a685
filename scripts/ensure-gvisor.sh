#!/usr/bin/env bash
# ensure-gvisor.sh: gVisor's runsc as a runtime of the Docker engine and of
# Podman's service, offline.
#
#   bash scripts/ensure-gvisor.sh          # build (once), register (idempotent)
#   bash scripts/ensure-gvisor.sh build    # only build and cache runsc
#   bash scripts/ensure-gvisor.sh path     # print where runsc is (or will be)
#
# runsc is built from the Go module proxy (CGO off: a static binary of about
# 100 MB; about 4 minutes on two idle cores) and cached outside the clone in
# $CACHE/$VERSION/runsc, written aside and renamed into place, so later runs
# from any clone build nothing. Debian's own runsc (2022) cannot run with
# Docker's networking ("cannot run with network enabled in root network
# namespace"); this one can (../shared/notes/kernels.md).
#
# The Docker engine gets it as runtime $NAME: an entry under "runtimes" in
# /etc/docker/daemon.json, merged into what is there (ensure-docker.sh's
# address pools stay), then SIGHUP to dockerd, which reloads its runtimes
# without a restart. runsc runs with --host-uds=all: a confined sandbox's
# relay reaches its gateway through unix sockets on a volume they share,
# which gVisor keeps from a sandbox otherwise (docs/kernels.md). A second
# entry, $NAME-plain, runs the same runsc without it: the tests show that
# create refuses a confined sandbox there. Podman's service gets it through scripts/ensure-podman.sh,
# which names every runtime it finds cached in its containers.conf
# ([engine.runtimes]) and restarts the service when that changed.
#
# A second run with everything in place asks the engine once and exits.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

VERSION=${LITTERBOX_GVISOR_VERSION:-v0.0.0-20260905035102-160fafc42237}
CACHE=${LITTERBOX_GVISOR_CACHE:-${LITTERBOX_CACHE:-/var/cache/litterbox}/gvisor}
RUNSC=$CACHE/$VERSION/runsc
NAME=${LITTERBOX_GVISOR_RUNTIME:-runsc}
DAEMON_JSON=${DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}

log() { printf 'ensure-gvisor: %s\n' "$*" >&2; }

registered() {
  local rts
  rts=$(timeout 20 docker info --format '{{json .Runtimes}}' 2>/dev/null) || return 1
  jq -e --arg n "$NAME" --arg p "$RUNSC" '.[$n].path == $p and .[$n].runtimeArgs == ["--host-uds=all"] and .[$n + "-plain"].path == $p' <<<"$rts" >/dev/null 2>&1
}
podman_up() { [ -S /run/litterbox-podman/podman.sock ]; }
podman_knows() { grep -qF "$NAME = [\"$RUNSC\"]" /run/litterbox-podman/containers.conf 2>/dev/null; }

build() {
  [ -x "$RUNSC" ] && return 0
  command -v go >/dev/null || { log "building runsc needs Go: install it, then run this again"; exit 1; }
  mkdir -p "$CACHE"
  # One build at a time: CI runs this beside ensure-kubernetes.sh build,
  # which needs runsc too; the second waits for the first and finds it.
  exec 9>"$CACHE/build.lock"
  flock 9
  [ -x "$RUNSC" ] && return 0
  local tmp t0=$SECONDS
  tmp=$(mktemp -d "$CACHE/build.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  log "building runsc $VERSION from the Go module proxy into $RUNSC (about 4 minutes on two idle cores)"
  # From /: outside any module, so the clone's go.mod plays no part.
  (cd / && CGO_ENABLED=0 GOBIN=$tmp/bin GOFLAGS=-buildvcs=false go install "gvisor.dev/gvisor/runsc@$VERSION") >"$tmp/build.log" 2>&1 ||
    { tail -n 30 "$tmp/build.log" >&2; exit 1; }
  "$tmp/bin/runsc" --version >/dev/null
  mkdir -p "$CACHE/$VERSION"
  mv "$tmp/bin/runsc" "$RUNSC.tmp"
  mv "$RUNSC.tmp" "$RUNSC"
  rm -rf "$tmp"
  trap - EXIT
  log "built $RUNSC in $((SECONDS - t0)) s"
}

register_docker() {
  registered && return 0
  if [ "$(id -u)" != 0 ]; then
    log "registering $NAME with Docker writes $DAEMON_JSON: run this as root"
    exit 1
  fi
  command -v jq >/dev/null || apt_install jq
  mkdir -p "$(dirname "$DAEMON_JSON")"
  local cur='{}'
  [ -s "$DAEMON_JSON" ] && cur=$(cat "$DAEMON_JSON")
  jq --arg n "$NAME" --arg p "$RUNSC" '.runtimes[$n] = {path: $p, runtimeArgs: ["--host-uds=all"]} | .runtimes[$n + "-plain"] = {path: $p}' <<<"$cur" >"$DAEMON_JSON.tmp"
  mv "$DAEMON_JSON.tmp" "$DAEMON_JSON"
  if [ -s /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
    kill -HUP "$(cat /var/run/docker.pid)"
  else
    bash "$(dirname "$0")/ensure-docker.sh"
  fi
  for _ in $(seq 1 50); do
    registered && { log "Docker offers runtime $NAME ($RUNSC)"; return 0; }
    sleep 0.2
  done
  log "wrote $NAME into $DAEMON_JSON, but Docker does not offer it after a reload; see /tmp/dockerd.log"
  exit 1
}

case "${1:-up}" in
path)
  echo "$RUNSC"
  exit 0
  ;;
build)
  build
  exit 0
  ;;
up) ;;
*)
  echo "usage: $0 [up|build|path]" >&2
  exit 2
  ;;
esac

if [ -x "$RUNSC" ] && registered && { ! podman_up || podman_knows; }; then
  log "Docker offers runtime $NAME ($RUNSC)"
  exit 0
fi
build
register_docker
if podman_up && ! podman_knows; then
  bash "$(dirname "$0")/ensure-podman.sh"
fi
