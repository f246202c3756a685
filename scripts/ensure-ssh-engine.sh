#!/usr/bin/env bash
# ensure-ssh-engine.sh: a second Docker engine that behaves like a remote host
# reached over ssh, offline, without disturbing the local Docker engine.
#
#   bash scripts/ensure-ssh-engine.sh          # start (idempotent; quick when up)
#   bash scripts/ensure-ssh-engine.sh env      # print DOCKER_HOST=ssh://... for eval
#   bash scripts/ensure-ssh-engine.sh down     # stop it and remove its namespace
#   bash scripts/ensure-ssh-engine.sh up --open   # the same for a variant engine
#
# --open is a second engine of the same kind (its own namespace, sockets,
# data root and ssh alias, `litterbox-open`) whose dockerd runs with
# --iptables=false: sandboxes on different networks reach each other there,
# which litterbox's isolation check must notice (DOCKER_HOST=ssh://litterbox-open,
# or its socket unix:///run/litterbox-open/docker.sock).
#
# The "remote host" is a network namespace ($REMOTE_NETNS) joined to this one
# by a veth pair ($HOST_IP here, $REMOTE_IP there). Inside it run a dockerd
# with its own data root, exec root, socket, containerd and firewall (so
# sandboxes are isolated there as on any host), and an sshd with its own host
# key that accepts one throwaway key, for a user in the docker group whose
# shell starts instantly. Ports the engine publishes on its 127.0.0.1 are not
# reachable from here: just as with a real remote host.
#
# The client side is one Host entry, `litterbox-remote`, in an ssh config file
# included from /root/.ssh/config (ssh reads the passwd home, not $HOME), so
# DOCKER_HOST=ssh://litterbox-remote works for the docker CLI and for ssh.
# Two more entries fail on purpose, for the tests of litterbox's errors:
# `litterbox-remote-wrongkey` offers a key the host does not accept, and
# `litterbox-remote-down` a port where nothing listens.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

ACTION=up
OPEN=
for a in "$@"; do
  case "$a" in
  up | env | down) ACTION=$a ;;
  --open) OPEN=1 ;;
  *)
    echo "usage: $0 [up|env|down] [--open]" >&2
    exit 2
    ;;
  esac
done

if [ -z "$OPEN" ]; then
  DIR=${REMOTE_DIR:-/run/litterbox-remote}
  REMOTE_NETNS=${REMOTE_NETNS:-litterbox-remote}
  HOST_IF=lbremote-h
  NS_IF=lbremote-n
  HOST_IP=10.202.0.1
  REMOTE_IP=10.202.0.2
  SSH_ALIAS=litterbox-remote
  STATE=/var/lib/litterbox-remote # the engine's data root: kept across restarts
  POOL=10.214.0.0/16
  DOCKERD_FLAGS=()
else
  DIR=/run/litterbox-open
  REMOTE_NETNS=litterbox-open
  HOST_IF=lbopen-h
  NS_IF=lbopen-n
  HOST_IP=10.202.0.5
  REMOTE_IP=10.202.0.6
  SSH_ALIAS=litterbox-open
  STATE=/var/lib/litterbox-open
  POOL=10.215.0.0/16
  DOCKERD_FLAGS=(--iptables=false)
fi
REMOTE_USER=lbremote
SOCK=$DIR/docker.sock
IMAGE=${LITTERBOX_TEST_IMAGE:-busybox:latest}

log() { printf 'ensure-ssh-engine: %s\n' "$*" >&2; }
alive() { [ -f "$DIR/$1.pid" ] && kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null; }
local_api() { DOCKER_HOST=unix://$SOCK docker "$@"; }
inns() { nsenter --net="/run/netns/$REMOTE_NETNS" "$@"; }

stop() {
  for p in sshd dockerd; do
    if alive "$p"; then
      kill "$(cat "$DIR/$p.pid")" 2>/dev/null || true
      for _ in $(seq 1 50); do alive "$p" || break; sleep 0.1; done
    fi
    rm -f "$DIR/$p.pid"
  done
}

case "$ACTION" in
env)
  echo "DOCKER_HOST=ssh://$SSH_ALIAS"
  exit 0
  ;;
down)
  stop
  [ -e "/run/netns/$REMOTE_NETNS" ] && ip netns delete "$REMOTE_NETNS"
  ip link delete "$HOST_IF" 2>/dev/null || true
  log "stopped"
  exit 0
  ;;
up) ;;
esac

if [ "$(id -u)" != 0 ]; then
  log "this sets up a namespace, a dockerd and an sshd: run it as root"
  exit 1
fi

# The client side: the Host entries, written on every run (cheap, and an
# engine started by an older version of this script gets the new ones).
client_side() {
  mkdir -p /root/.ssh
  chmod 700 /root/.ssh
  [ -f "$DIR/wrong_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$DIR/wrong_key"
  local common="  HostName $REMOTE_IP
  User $REMOTE_USER
  IdentitiesOnly yes
  UserKnownHostsFile $DIR/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes"
  printf 'Host %s\n%s\n  IdentityFile %s\n' "$SSH_ALIAS" "$common" "$DIR/client_key" >"$DIR/ssh_config.new"
  printf 'Host %s-wrongkey\n%s\n  IdentityFile %s\n' "$SSH_ALIAS" "$common" "$DIR/wrong_key" >>"$DIR/ssh_config.new"
  printf 'Host %s-down\n%s\n  IdentityFile %s\n  Port 2\n' "$SSH_ALIAS" "$common" "$DIR/client_key" >>"$DIR/ssh_config.new"
  mv "$DIR/ssh_config.new" "$DIR/ssh_config"
  printf '%s %s\n' "$REMOTE_IP" "$(cat "$DIR/host_key.pub")" >"$DIR/known_hosts"
  touch /root/.ssh/config
  if ! grep -qF "Include $DIR/ssh_config" /root/.ssh/config; then
    # Include must come before any Host block to apply everywhere.
    { echo "Include $DIR/ssh_config"; cat /root/.ssh/config; } >/root/.ssh/config.new
    mv /root/.ssh/config.new /root/.ssh/config
    chmod 600 /root/.ssh/config
  fi
}

if alive dockerd && alive sshd && DOCKER_HOST=ssh://$SSH_ALIAS timeout 20 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; then
  client_side
  log "engine answers at ssh://$SSH_ALIAS"
  exit 0
fi
stop

command -v dockerd >/dev/null || bash "$(dirname "$0")/ensure-docker.sh"
if ! command -v sshd >/dev/null 2>&1 && [ ! -x /usr/sbin/sshd ]; then
  log "installing Debian's openssh-server"
  apt_install openssh-server
fi

mkdir -p "$DIR" "$STATE"
chmod 755 "$DIR"

# The remote user: in the docker group, with a shell that starts instantly
# (root's .bashrc on these machines takes seconds).
getent group docker >/dev/null || groupadd --system docker
if ! id "$REMOTE_USER" >/dev/null 2>&1; then
  # A group of the name left by an earlier user (a machine whose
  # /etc/passwd was reset) is taken as the user's own.
  gid=()
  if getent group "$REMOTE_USER" >/dev/null; then gid=(--gid "$REMOTE_USER"); fi
  useradd --system --no-create-home --home-dir "$DIR" --shell /bin/sh --groups docker "${gid[@]}" "$REMOTE_USER"
fi
# No password, but not locked: sshd without PAM refuses a "!" account even
# for key logins.
usermod -p '*' "$REMOTE_USER"

# The network namespace and its link to this one.
if [ ! -e "/run/netns/$REMOTE_NETNS" ]; then
  ip netns add "$REMOTE_NETNS"
  ip -n "$REMOTE_NETNS" link set lo up
fi
if ! ip link show "$HOST_IF" >/dev/null 2>&1; then
  ip link add "$HOST_IF" type veth peer name "$NS_IF"
  ip link set "$NS_IF" netns "$REMOTE_NETNS"
  ip addr add "$HOST_IP/30" dev "$HOST_IF"
  ip link set "$HOST_IF" up
  ip -n "$REMOTE_NETNS" addr add "$REMOTE_IP/30" dev "$NS_IF"
  ip -n "$REMOTE_NETNS" link set "$NS_IF" up
fi

# The engine. Its own config file: the shared /etc/docker/daemon.json sets
# address pools that clash with flags.
cat >"$DIR/daemon.json" <<JSON
{
  "default-address-pools": [{"base": "$POOL", "size": 26}]
}
JSON
rm -f "$SOCK"
# From /, see ensure-podman.sh.
(cd / && exec setsid nsenter --net="/run/netns/$REMOTE_NETNS" dockerd \
  --config-file "$DIR/daemon.json" \
  --data-root "$STATE/docker" --exec-root "$DIR/exec" --pidfile "$DIR/dockerd.pid" \
  -H "unix://$SOCK" --group docker ${DOCKERD_FLAGS[@]+"${DOCKERD_FLAGS[@]}"} >>"$DIR/dockerd.log" 2>&1 </dev/null) &
for _ in $(seq 1 150); do
  local_api info >/dev/null 2>&1 && break
  sleep 0.2
done
if ! local_api info >/dev/null 2>&1; then
  log "the second dockerd did not answer within 30 s; see $DIR/dockerd.log"
  tail -n 20 "$DIR/dockerd.log" >&2 || true
  exit 1
fi

# sshd with its own host key and one authorized throwaway key.
[ -f "$DIR/host_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$DIR/host_key"
[ -f "$DIR/client_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$DIR/client_key"
install -m 0644 "$DIR/client_key.pub" "$DIR/authorized_keys"
mkdir -p /run/sshd
cat >"$DIR/sshd_config" <<EOF
ListenAddress $REMOTE_IP
Port 22
HostKey $DIR/host_key
PidFile $DIR/sshd.pid
AuthorizedKeysFile $DIR/authorized_keys
AllowUsers $REMOTE_USER
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PrintMotd no
# Many tests open sessions at once, multiplexed or not.
MaxSessions 100
MaxStartups 100:30:200
SetEnv DOCKER_HOST=unix://$SOCK
EOF
inns /usr/sbin/sshd -f "$DIR/sshd_config" -E "$DIR/sshd.log"

client_side

for _ in $(seq 1 50); do
  ssh "$SSH_ALIAS" true 2>/dev/null && break
  sleep 0.2
done
if ! DOCKER_HOST=ssh://$SSH_ALIAS timeout 20 docker version --format '{{.Server.Version}}' >/dev/null; then
  log "docker over ssh://$SSH_ALIAS does not answer; see $DIR/sshd.log and $DIR/dockerd.log"
  exit 1
fi

if ! local_api image inspect "$IMAGE" >/dev/null 2>&1; then
  docker image inspect "$IMAGE" >/dev/null 2>&1 || bash "$(dirname "$0")/ensure-busybox.sh"
  docker save "$IMAGE" | local_api load >/dev/null
fi
log "engine answers at ssh://$SSH_ALIAS ($REMOTE_USER@$REMOTE_IP, namespace $REMOTE_NETNS)"
