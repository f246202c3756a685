#!/usr/bin/env bash
# ensure-docker.sh: make a Docker engine answer on this machine.
#
# Idempotent: when `docker info` already answers it does nothing. Otherwise it
# installs Debian's docker.io (as root, when dockerd is missing) and starts
# dockerd in the background, then waits until the engine answers.
set -euo pipefail

log() { printf 'ensure-docker: %s\n' "$*" >&2; }

if docker info >/dev/null 2>&1; then
  log "engine already answers"
  exit 0
fi

# Every sandbox has its own bridge network, and Docker's default address
# pools hold only about 30 of them. Give an engine this script configures
# room for 1024 (/26 each, 62 addresses: plenty for one container), unless
# the machine already has a daemon.json of its own. It is written before the
# install, so an engine the package starts by itself gets it too.
if [ "$(id -u)" = 0 ] && [ ! -e /etc/docker/daemon.json ]; then
  mkdir -p /etc/docker
  cat >/etc/docker/daemon.json <<'JSON'
{
  "default-address-pools": [{"base": "10.213.0.0/16", "size": 26}]
}
JSON
  log "wrote /etc/docker/daemon.json (address pools for 1024 sandbox networks)"
fi

if ! command -v dockerd >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    log "dockerd is missing and this is not root: install Docker, then run this again"
    exit 1
  fi
  log "installing Debian's docker.io"
  . "$(dirname "${BASH_SOURCE[0]}")/apt.sh"
  apt_install -o Dpkg::Options::=--force-confold docker.io
fi

# The default engine's dockerd, not another one (the ssh engines of
# ensure-ssh-engine.sh run dockerds of their own with -H): its pid file names
# it.
default_dockerd_runs() {
  [ -s /var/run/docker.pid ] && kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null
}
if ! default_dockerd_runs && ! timeout 10 docker info >/dev/null 2>&1; then
  log "starting dockerd (log: /tmp/dockerd.log)"
  (cd / && exec setsid dockerd >/tmp/dockerd.log 2>&1 </dev/null) & # from /, see ensure-podman.sh
fi

for _ in $(seq 1 120); do
  if docker info >/dev/null 2>&1; then
    log "engine answers"
    exit 0
  fi
  sleep 0.5
done
if default_dockerd_runs; then
  log "dockerd (pid $(cat /var/run/docker.pid)) runs but does not answer: it may be hung (Docker before 20.10.27 can deadlock in its network code, moby/moby#46661). Stop it (kill \$(cat /var/run/docker.pid), or kill -9 if it does not exit), then run this again"
  exit 1
fi
log "dockerd did not answer within 60 s; see /tmp/dockerd.log"
tail -n 20 /tmp/dockerd.log >&2 || true
exit 1
