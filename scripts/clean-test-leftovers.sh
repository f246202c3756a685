#!/usr/bin/env bash
# clean-test-leftovers.sh: remove the containers, networks, volumes and
# Kubernetes namespaces the test suite made, found by the label key
# dev.litterbox.test (any value), and nothing else. Each testscript removes
# its own when it ends; this catches what an interrupted run left. Idempotent: with nothing to remove it does nothing.
#
# Usage: clean-test-leftovers.sh [VALUE]
# With VALUE, only resources labelled dev.litterbox.test=VALUE go: use that on
# a machine where other test runs or benchmarks are in flight, since without
# it their resources are removed too.
set -euo pipefail

key=dev.litterbox.test
if [ $# -gt 0 ]; then
  key="$key=$1"
fi
log() { printf 'clean-test-leftovers: %s\n' "$*" >&2; }

# clean HOST...: remove what carries the label on the engine the docker CLI
# reaches with HOST as its arguments ("" for its own engine).
clean() {
  local name=$1
  shift
  if ! docker "$@" info >/dev/null 2>&1; then
    log "$name: no engine answers; nothing to clean"
    return 0
  fi
  local containers networks volumes
  mapfile -t containers < <(docker "$@" ps --all --quiet --filter "label=$key")
  if [ "${#containers[@]}" -gt 0 ]; then
    docker "$@" rm --force --volumes "${containers[@]}" >/dev/null
  fi
  mapfile -t networks < <(docker "$@" network ls --quiet --filter "label=$key")
  if [ "${#networks[@]}" -gt 0 ]; then
    docker "$@" network rm "${networks[@]}" >/dev/null
  fi
  mapfile -t volumes < <(docker "$@" volume ls --quiet --filter "label=$key")
  if [ "${#volumes[@]}" -gt 0 ]; then
    docker "$@" volume rm --force "${volumes[@]}" >/dev/null
  fi
  log "$name: removed ${#containers[@]} container(s), ${#networks[@]} network(s), ${#volumes[@]} volume(s) labelled $key"
}

# The namespaces the Kubernetes tests made (enginetest.Kubernetes.Namespace), in
# the cluster of scripts/ensure-kubernetes.sh when it runs; deleting one
# deletes its pods.
k8s=/run/litterbox-k8s
if [ -f "$k8s/kubeconfig" ] && [ -x "$k8s/bin/kubectl" ] &&
  KUBECONFIG=$k8s/kubeconfig "$k8s/bin/kubectl" get --raw /readyz --request-timeout=5s >/dev/null 2>&1; then
  n=$(KUBECONFIG=$k8s/kubeconfig "$k8s/bin/kubectl" delete namespace --selector "$key" --wait=false -o name 2>/dev/null | grep -c '^namespace/' || true)
  log "kubernetes: removed $n namespace(s) labelled $key"
fi

# The engines the tests use: the docker CLI's own, and Podman's service
# (scripts/ensure-podman.sh), when it runs.
clean docker
podman_host=${CONTAINER_HOST:-unix:///run/litterbox-podman/podman.sock}
if [ -S "${podman_host#unix://}" ]; then
  clean podman --host "$podman_host"
fi
# The ssh engine and its open variant (scripts/ensure-ssh-engine.sh), through
# their sockets.
for sock in /run/litterbox-remote/docker.sock /run/litterbox-open/docker.sock; do
  if [ -S "$sock" ]; then
    clean "$sock" --host "unix://$sock"
  fi
done
