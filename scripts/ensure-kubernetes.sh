#!/usr/bin/env bash
# ensure-kubernetes.sh: a real single-node Kubernetes for the tests, offline,
# in its own network namespace, without disturbing the Docker engine.
#
#   bash scripts/ensure-kubernetes.sh          # start (idempotent; quick when up)
#   bash scripts/ensure-kubernetes.sh build    # only the slow, cached part: no cluster
#   bash scripts/ensure-kubernetes.sh env      # print KUBECONFIG=... for eval
#   bash scripts/ensure-kubernetes.sh down     # stop it, remove its namespace and state
#
# Everything comes from the Go module proxy and Debian's archive; no registry.
# `build` compiles etcd and Kubernetes $K8S_VERSION (apiserver, controller
# manager, scheduler, kubelet, kubectl) from k8s.io/kubernetes through the
# module proxy (9-12 minutes on two cores the first time) and
# kube-network-policies $NETPOL_VERSION (the NetworkPolicy enforcer, beside
# the bridge plugin, which enforces none), unpacks Debian's
# containerd, runc and CNI plugins (downloaded, not installed: Docker's own
# containerd is left alone) and builds a pause image. All of it is cached
# outside the clone under $CACHE, keyed by version: later runs, from any
# clone on the machine, build nothing. See docs/kubernetes-test-cluster.md and
# ../shared/notes/kubernetes.md for how each piece was found to work here.
#
# The cluster runs in the network namespace $NETNS, joined to this one by a
# veth pair ($HOST_IP here, $NODE_IP there): kubectl reaches the apiserver at
# https://$NODE_IP:6443, and pods have no route out of the namespace. Its
# state (certificates, kubeconfig, etcd, containerd, kubelet) lives under $DIR
# and `down` removes it. A second namespace, $EXT_NETNS, stands for what lies
# outside the cluster: a web server at a public address, a metadata address
# and the API server's and cluster DNS's service addresses, routed from the
# node, so a test can tell a NetworkPolicy that refuses them from a network
# that has no route. busybox:latest comes from the Docker engine (built by
# scripts/ensure-busybox.sh), imported into the cluster's containerd; pods
# name it busybox:latest with imagePullPolicy Never (or IfNotPresent).
#
# gVisor is the RuntimeClass $GVISOR_CLASS (handler runsc in containerd's
# configuration) when runsc and its shim could be built: a pod with
# runtimeClassName $GVISOR_CLASS runs on gVisor's kernel. When they could
# not (no Go, no module proxy, a build that fails), the cluster comes up
# without the class and says so, and the tests that need it skip (fail in CI).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/apt.sh"

K8S_VERSION=${LITTERBOX_K8S_VERSION:-v1.34.4}
CACHE=${LITTERBOX_K8S_CACHE:-/var/cache/litterbox/k8s}
# One cluster per machine: the namespace, the addresses and $DIR are fixed
# (internal/enginetest looks for the kubeconfig in $DIR).
DIR=/run/litterbox-k8s
NETNS=litterbox-k8s
IMAGE=${LITTERBOX_TEST_IMAGE:-busybox:latest}

BIN=$CACHE/cache/$K8S_VERSION/bin # the layout of the notes' build.sh
SRC=$CACHE/cache/$K8S_VERSION/src
ROOT=$CACHE/root                  # Debian's packages, unpacked
IMG=$CACHE/cache/images           # the pause image, an OCI layout tar
BINS="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl etcd"
# kube-network-policies enforces NetworkPolicy on the node with nftables and
# an NFQUEUE: the first packet of each connection of a pod a policy selects
# is judged by the controller, in user space.
NETPOL_VERSION=${LITTERBOX_NETPOL_VERSION:-v0.8.0}
NETPOL_DIR=$CACHE/cache/kube-network-policies/$NETPOL_VERSION
NETPOL=$NETPOL_DIR/kube-network-policies
DEBS="containerd runc containernetworking-plugins"
# gVisor: runsc where scripts/ensure-gvisor.sh caches it, and the shim built
# from the same version of the module beside it under $CACHE.
GVISOR_SH=$(dirname "${BASH_SOURCE[0]}")/ensure-gvisor.sh
RUNSC=$(bash "$GVISOR_SH" path)
GVISOR_VERSION=$(basename "$(dirname "$RUNSC")")
GVISOR_DIR=$CACHE/cache/gvisor-shim/$GVISOR_VERSION
SHIM=$GVISOR_DIR/bin/containerd-shim-runsc-v1
GVISOR_CLASS=gvisor

HOST_IF=lbk8s-h
NS_IF=lbk8s-n
HOST_IP=10.203.0.1
NODE_IP=10.203.0.2
SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1
POD_CIDR=10.244.0.0/24
NODE_NAME=litterbox-k8s
# Outside the cluster: a namespace joined to the node's by a veth pair
# ($EXT_NODE_IP on the node, $EXT_IP outside) that answers HTTP on port 80 at
# $OUTSIDE_ADDRS. The node routes those addresses there and nothing else.
EXT_NETNS=litterbox-k8s-ext
EXT_NODE_IF=lbk8s-x
EXT_IF=lbk8s-e
EXT_NODE_IP=10.203.0.5
EXT_IP=10.203.0.6
# A public address (TEST-NET-2, 198.51.100.0/24, routed nowhere else), the
# cloud metadata address, the API server's service address and the usual
# cluster DNS service address: no kube-proxy here, so nothing else answers
# at the last two.
OUTSIDE_ADDRS="198.51.100.1 169.254.169.254 $SERVICE_IP 10.96.0.10"
CONTEXT=litterbox
PAUSE_IMAGE=localhost/litterbox/pause:1.0

PKI=$DIR/pki
PIDS=$DIR/pids
LOGS=$DIR/logs
KUBECONFIG_FILE=$DIR/kubeconfig
KUBECTL=$BIN/kubectl
CTRD_SOCK=$DIR/containerd/containerd.sock

T0=$(date +%s%N)
log() { printf 'ensure-kubernetes: %s\n' "$*" >&2; }
elapsed() { awk -v a="$(date +%s%N)" -v b="$T0" 'BEGIN { printf "%.1fs", (a - b) / 1e9 }'; }
die() {
  log "$*"
  exit 1
}

# exe_of NAME: the executable a daemon's PID file must point at.
exe_of() {
  case $1 in
  containerd) echo "$ROOT/usr/bin/containerd" ;;
  kube-network-policies) echo "$NETPOL" ;;
  outside) readlink -f "$(command -v busybox)" ;;
  *) echo "$BIN/$1" ;;
  esac
}
# alive NAME: its PID file names a live process running the expected binary
# (a PID reused by something else after a reboot does not count).
alive() {
  local pid
  [ -f "$PIDS/$1.pid" ] || return 1
  pid=$(cat "$PIDS/$1.pid")
  kill -0 "$pid" 2>/dev/null && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(exe_of "$1")" ]
}
kc() { KUBECONFIG=$KUBECONFIG_FILE "$KUBECTL" "$@"; }
ctr_() { "$ROOT/usr/bin/ctr" -a "$CTRD_SOCK" -n k8s.io "$@"; }
# api PATH: the apiserver answers GET PATH with success.
api() { curl -sf --max-time 5 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" "https://$NODE_IP:6443$1" >/dev/null; }
readyz() { api /readyz; }
node_ready() { [ "$(kc get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; }
# wait_for DESC SECONDS CMD...: poll CMD every 0.2 s until it succeeds; after
# SECONDS, fail and show the end of each daemon's log.
wait_for() {
  local desc=$1 limit=$2 end=$((SECONDS + $2)) f
  shift 2
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$end" ]; then
      log "no $desc within ${limit}s; the end of each log in $LOGS:"
      for f in "$LOGS"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 5 "$f" >&2; }; done
      exit 1
    fi
    sleep 0.2
  done
}

# ---------------------------------------------------------------- build
have_bins() {
  local b
  for b in $BINS; do [ -x "$BIN/$b" ] || return 1; done
}

# build_kubernetes compiles the control plane, the kubelet, kubectl and etcd.
# k8s.io/kubernetes replaces its 31 k8s.io/* dependencies with ./staging, which
# a dependent module cannot use, so a scratch module requires it and maps each
# to the published k8s.io/X at the matching v0.N.P.
build_kubernetes() {
  have_bins && return 0
  command -v go >/dev/null || die "building Kubernetes needs Go: install it, then run this again"
  log "building Kubernetes $K8S_VERSION and etcd from the Go module proxy into $BIN (9-12 min the first time)"
  local staging=v0.${K8S_VERSION#v1.} kmod b pkgs="" ld
  mkdir -p "$BIN" "$SRC/cmd/etcd"
  (
    cd "$SRC"
    if [ ! -f tools.go.done ]; then
      rm -f go.mod go.sum
      go mod download "k8s.io/kubernetes@$K8S_VERSION"
      kmod=$(go env GOMODCACHE)/k8s.io/kubernetes@$K8S_VERSION/go.mod
      {
        printf 'module localbuild\n\ngo 1.24\n\ngodebug default=go1.24\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$K8S_VERSION"
        grep -E '^\s*k8s.io/[^ ]+ => \./staging/' "$kmod" | awk -v v="$staging" '{print "\t" $1 " => " $1 " " v}'
        echo ")"
      } >go.mod
      cat >tools.go <<'EOT'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
EOT
      # etcd at the version Kubernetes pins (Debian's 3.4 is too old).
      cat >cmd/etcd/main.go <<'EOT'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOT
      go mod tidy
      cp tools.go tools.go.done
    fi
    export CGO_ENABLED=0
    ld="-s -w"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)"
      ld="$ld -X $p.gitTreeState=clean -X $p.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    done
    # Build into a scratch folder and move: an interrupted build leaves no
    # half-written binary that have_bins would take for a finished one.
    rm -rf "$BIN.tmp"
    mkdir -p "$BIN.tmp"
    [ -x "$BIN/etcd" ] || go build -trimpath -ldflags "-s -w" -o "$BIN.tmp/etcd" ./cmd/etcd
    for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl; do
      [ -x "$BIN/$b" ] || pkgs="$pkgs k8s.io/kubernetes/cmd/$b"
    done
    # shellcheck disable=SC2086 # pkgs is a list of package paths
    [ -z "$pkgs" ] || go build -trimpath -tags providerless,notest -ldflags "$ld" -o "$BIN.tmp/" $pkgs
    for b in "$BIN.tmp"/*; do mv "$b" "$BIN/"; done
    rmdir "$BIN.tmp"
  )
  have_bins || die "the build left no binaries in $BIN"
  log "built Kubernetes $K8S_VERSION in $(elapsed)"
}

# build_netpol compiles kube-network-policies $NETPOL_VERSION from the module
# proxy: its controller package, run by a main of ours that reads the
# kubeconfig (its own main wants the in-cluster service account, as a pod).
# NRI stays asked for: containerd 1.6 has none, so the controller logs that it
# cannot connect and learns pod addresses from the apiserver; told NRI is off,
# v0.8.0 dereferences its missing NRI plugin at the first packet to an
# address that is no pod's, and dies.
build_netpol() {
  [ -x "$NETPOL" ] && return 0
  command -v go >/dev/null || die "building kube-network-policies needs Go: install it, then run this again"
  log "building kube-network-policies $NETPOL_VERSION from the Go module proxy into $NETPOL"
  mkdir -p "$NETPOL_DIR/src"
  (
    cd "$NETPOL_DIR/src"
    cat >main.go <<'EOT'
// Command kube-network-policies enforces the cluster's NetworkPolicies on
// this node: the controller of sigs.k8s.io/kube-network-policies, with a
// kubeconfig instead of the in-cluster service account.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig to reach the apiserver with")
	node := flag.String("hostname-override", "", "this node's name")
	klog.InitFlags(nil)
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		klog.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := informers.NewSharedInformerFactory(cs, 0)
	c, err := networkpolicy.NewController(cs, f.Networking().V1().NetworkPolicies(), f.Core().V1().Namespaces(), f.Core().V1().Pods(),
		nil, nil, nil, nil, networkpolicy.Config{NodeName: *node})
	if err != nil {
		klog.Fatal(err)
	}
	f.Start(ctx.Done())
	// Run removes its nftables table when ctx ends.
	if err := c.Run(ctx); err != nil && ctx.Err() == nil {
		klog.Fatal(err)
	}
}
EOT
    printf 'module localbuild\n\ngo 1.24\n' >go.mod
    go get "sigs.k8s.io/kube-network-policies@$NETPOL_VERSION"
    go mod tidy
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$NETPOL.tmp" .
    mv "$NETPOL.tmp" "$NETPOL"
  )
  [ -x "$NETPOL" ] || die "the build left no $NETPOL"
}

# gvisor_wanted: runsc is built, and its shim is built or has not failed
# to build at this version (a failure is not retried by every run: remove
# $SHIM.failed to try again).
gvisor_wanted() { [ -x "$RUNSC" ] && [ ! -f "$SHIM.failed" ]; }
gvisor_ready() { [ -x "$RUNSC" ] && [ -x "$SHIM" ]; }

# build_gvisor builds runsc (scripts/ensure-gvisor.sh build, about 4 minutes
# the first time; nothing when Docker's tests built it already) and gVisor's
# containerd shim, containerd-shim-runsc-v1, from the same module version
# (1-2 CPU-minutes more; seconds when the Go build cache holds it). Two changes make the shim work with Debian 12's
# containerd 1.6: a main of ours prints `start`'s socket address alone,
# where gVisor's answers with the JSON bootstrap parameters of containerd
# 1.7 and later (1.6 takes the JSON for an address: "dial unix
# {"version":2,...}: invalid argument"); and the shim tolerates being
# refused an OOM score of -999, which root here cannot set (no
# CAP_SYS_RESOURCE), as containerd's own shims do (a one-line change to the
# vendored gVisor, checked to apply). A failure is logged, not fatal: the
# cluster then has no gVisor.
build_gvisor() {
  gvisor_ready && return 0
  [ ! -f "$SHIM.failed" ] || return 0
  if [ ! -x "$RUNSC" ] && ! bash "$GVISOR_SH" build; then
    log "runsc could not be built: the cluster comes up without gVisor (no RuntimeClass $GVISOR_CLASS)"
    return 0
  fi
  log "building gVisor's containerd shim $GVISOR_VERSION from the Go module proxy into $SHIM"
  mkdir -p "$GVISOR_DIR"
  if ! (build_shim) >"$GVISOR_DIR.log" 2>&1; then
    tail -n 20 "$GVISOR_DIR.log" >&2
    mkdir -p "$(dirname "$SHIM")"
    mv "$GVISOR_DIR.log" "$SHIM.failed"
    log "gVisor's shim could not be built (log in $SHIM.failed): the cluster comes up without gVisor (no RuntimeClass $GVISOR_CLASS)"
    return 0
  fi
  rm -f "$GVISOR_DIR.log"
}

# build_shim runs in a subshell whose status build_gvisor tests, where set -e
# does not hold: every step says what it does when it fails.
build_shim() {
  local src=$GVISOR_DIR/src mgr=vendor/gvisor.dev/gvisor/pkg/shim/v1/manager.go
  local oom='if err := sys.SetOOMScore(cmd.Process.Pid, oomScoreMax); err != nil {'
  command -v go >/dev/null || { echo "building gVisor's shim needs Go"; return 1; }
  rm -rf "$src"
  mkdir -p "$src" "$(dirname "$SHIM")" && cd "$src" || return 1
  cat >main.go <<'EOT'
// Command containerd-shim-runsc-v1 is gVisor's containerd shim for the
// containerd 1.6 of litterbox's test cluster: gVisor's own answers `start`
// with the JSON bootstrap parameters of containerd 1.7 and later, which
// 1.6 takes for the socket's address; this one prints the address alone.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"gvisor.dev/gvisor/shim/v1/cli"
)

func main() {
	if os.Args[len(os.Args)-1] != "start" {
		cli.Main()
		return
	}
	out := os.Stdout
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout = w
	read := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		read <- b
	}()
	cli.Main() // on failure it says why and exits
	w.Close()
	b := <-read
	var params struct{ Address string }
	if json.Unmarshal(b, &params) != nil || params.Address == "" {
		out.Write(b)
		return
	}
	fmt.Fprint(out, params.Address)
}
EOT
  printf 'module localbuild\n\ngo 1.24\n' >go.mod &&
    go get "gvisor.dev/gvisor@$GVISOR_VERSION" && go mod tidy && go mod vendor || return 1
  grep -qF "$oom" "$mgr" || { echo "$mgr has no line '$oom' to change: gVisor $GVISOR_VERSION differs from the one this script knows"; return 1; }
  sed -i "s/$oom/if err := sys.SetOOMScore(cmd.Process.Pid, oomScoreMax); err != nil \&\& !os.IsPermission(err) {/" "$mgr" &&
    CGO_ENABLED=0 go build -mod=vendor -trimpath -ldflags "-s -w" -o "$SHIM.tmp" . &&
    mv "$SHIM.tmp" "$SHIM" || return 1
  cd / && rm -rf "$src"
}

# unpack_debs puts Debian's containerd, runc and CNI plugins under $ROOT
# without installing them.
unpack_debs() {
  [ -x "$ROOT/usr/bin/containerd" ] && [ -x "$ROOT/usr/sbin/runc" ] && [ -x "$ROOT/usr/lib/cni/bridge" ] && return 0
  log "downloading and unpacking Debian's $DEBS into $ROOT"
  rm -rf "$CACHE/debs" "$ROOT"
  mkdir -p "$CACHE/debs" "$ROOT"
  # shellcheck disable=SC2086 # DEBS is a list of package names
  (cd "$CACHE/debs" && { apt_get download -qq $DEBS 2>/dev/null || { apt_get update -qq && apt_get download -qq $DEBS; }; })
  for d in "$CACHE"/debs/*.deb; do dpkg -x "$d" "$ROOT"; done
}

# mkimage NAME OUT ROOTFS ENTRYPOINT CMD: an OCI image layout tar of one
# layer, which `ctr images import` reads.
mkimage() {
  local name=$1 out=$2 rootfs=$3 ep=$4 cmd=$5 arch w ld ls cd cs md ms
  arch=$(dpkg --print-architecture) # amd64 and arm64 are OCI's names too
  w=$(mktemp -d)
  mkdir -p "$w/blobs/sha256"
  tar -C "$rootfs" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$w/layer" .
  ld=$(sha256sum "$w/layer" | cut -d' ' -f1) ls=$(stat -c %s "$w/layer")
  mv "$w/layer" "$w/blobs/sha256/$ld"
  printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":%s,"Cmd":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$arch" "$ep" "$cmd" "$ld" >"$w/config"
  cd=$(sha256sum "$w/config" | cut -d' ' -f1) cs=$(stat -c %s "$w/config")
  mv "$w/config" "$w/blobs/sha256/$cd"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$cd" "$cs" "$ld" "$ls" >"$w/manifest"
  md=$(sha256sum "$w/manifest" | cut -d' ' -f1) ms=$(stat -c %s "$w/manifest")
  mv "$w/manifest" "$w/blobs/sha256/$md"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"%s","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$md" "$ms" "$arch" "$name" "${name##*:}" >"$w/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$w/oci-layout"
  tar -C "$w" -cf "$out.tmp" oci-layout index.json blobs
  mv "$out.tmp" "$out"
  rm -rf "$w"
}

# build_pause makes the pod sandbox image: one static Go binary that waits
# for SIGTERM and reaps children (Kubernetes' own pause is C; no registry
# here to pull it from, and Go is already needed for the build).
build_pause() {
  [ -f "$IMG/pause.tar" ] && return 0
  log "building the pause image"
  rm -rf "$IMG/pause"
  mkdir -p "$IMG/pause/rootfs"
  cat >"$IMG/pause/pause.go" <<'EOT'
// Command pause is PID 1 of every pod sandbox of litterbox's test cluster:
// it holds the pod's namespaces, reaps orphans and exits on SIGTERM.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 16)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			if pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
EOT
  (cd "$IMG/pause" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o rootfs/pause pause.go)
  mkimage "$PAUSE_IMAGE" "$IMG/pause.tar" "$IMG/pause/rootfs" '["/pause"]' 'null'
}

build() {
  mkdir -p "$CACHE"
  build_kubernetes
  build_netpol
  unpack_debs
  build_pause
  build_gvisor
}

# ---------------------------------------------------------------- down
# kill_daemons NAME...: SIGKILL the daemons of those PID files and wait until
# they are gone. The cluster's state goes with down anyway, and a graceful
# stop took 20 s and more (the apiserver drains its watches for a minute).
kill_daemons() {
  local n pids="" left
  for n in "$@"; do
    if alive "$n"; then
      pids="$pids $(cat "$PIDS/$n.pid")"
    fi
    rm -f "$PIDS/$n.pid"
  done
  [ -n "$pids" ] || return 0
  # shellcheck disable=SC2086 # a list of PIDs
  kill -KILL $pids 2>/dev/null || true
  for _ in $(seq 1 100); do
    left=""
    for n in $pids; do kill -0 "$n" 2>/dev/null && left="$left $n"; done
    [ -n "$left" ] || return 0
    sleep 0.05
  done
}

down() {
  local d p pid mps
  # The kubelet first, so it restarts nothing; then every container of our
  # containerd, while it can still tell which are ours.
  kill_daemons kubelet
  if alive containerd; then
    for p in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$p" >/dev/null 2>&1 || true; done
    for _ in $(seq 1 50); do
      ctr_ tasks ls 2>/dev/null | grep -q RUNNING || break
      sleep 0.1
    done
    for p in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks rm -f "$p" >/dev/null 2>&1 || true; done
  fi
  kill_daemons kube-network-policies outside kube-scheduler kube-controller-manager kube-apiserver containerd etcd
  # Shims outlive containerd by design; ours carry its socket on their
  # command line (Docker's run the same binary name from another path).
  for pid in $(pgrep -f -- "-address $CTRD_SOCK" || true); do
    case "$(readlink "/proc/$pid/exe" 2>/dev/null)" in
    "$ROOT/usr/bin/containerd-shim-runc-v2" | "$SHIM") kill -KILL "$pid" 2>/dev/null || true ;;
    esac
  done
  # gVisor's sandboxes outlive a killed shim: runsc removes what is left
  # under its root.
  if [ -x "$RUNSC" ] && [ -d "$DIR/runsc/k8s.io" ]; then
    for p in $("$RUNSC" --root "$DIR/runsc/k8s.io" list -quiet 2>/dev/null); do
      "$RUNSC" --root "$DIR/runsc/k8s.io" delete --force "$p" >/dev/null 2>&1 || true
    done
  fi
  # Paths containerd 1.6 and the kubelet write whatever they are told: the
  # folders up recorded as new, and libcni's cache of our network's results.
  if [ -f "$DIR/created-host-dirs" ]; then
    while read -r d; do rm -rf "$d"; done <"$DIR/created-host-dirs"
  fi
  for p in /var/lib/cni/results/litterbox-k8s-*-eth0; do
    [ -e "$p" ] || continue
    d=${p#/var/lib/cni/results/litterbox-k8s-}
    rm -f "$p" "/var/lib/cni/results/cni-loopback-${d%-eth0}-lo"
  done
  # Every mount under $DIR, deepest first ($DIR itself is one: see up). The
  # pods' network namespaces are among them: unmounted, they and their veths go.
  for _ in 1 2 3; do
    mps=$(awk -v r="$DIR" '$5 == r || index($5, r "/") == 1 { print length($5), $5 }' /proc/self/mountinfo | sort -rn | cut -d' ' -f2-)
    [ -n "$mps" ] || break
    for p in $mps; do umount "$p" 2>/dev/null || umount -l "$p" 2>/dev/null || true; done
  done
  # Deleting the namespace deletes the veth pair and the pods' bridge.
  [ ! -e "/run/netns/$NETNS" ] || ip netns delete "$NETNS"
  [ ! -e "/run/netns/$EXT_NETNS" ] || ip netns delete "$EXT_NETNS"
  ip link delete "$HOST_IF" 2>/dev/null || true
  # The kubelet's pod cgroups (cgroupfs driver), empty once the pods are gone.
  for p in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [ ! -d "$p" ] || find "$p" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  if awk -v r="$DIR" '$5 == r || index($5, r "/") == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    die "some mounts under $DIR would not go: see /proc/self/mountinfo, unmount them, then run down again"
  fi
  rm -rf "$DIR"
  log "stopped (the build cache in $CACHE stays)"
}

# ---------------------------------------------------------------- up
# start NAME CMD...: run CMD in the cluster's network namespace, in a session
# of its own so it outlives this script and its terminal. nsenter --net, not
# `ip netns exec`: the latter gives each process a private mount namespace,
# and containerd must see the kubelet's volume mounts.
start() {
  local name=$1
  shift
  alive "$name" && return 0
  (cd / && exec setsid nsenter --net="/run/netns/$NETNS" "$@" >>"$LOGS/$name.log" 2>&1 </dev/null) & # from /, see ensure-podman.sh
  echo $! >"$PIDS/$name.pid"
}

write_pki() {
  [ -f "$PKI/admin.crt" ] && return 0
  mkdir -p "$PKI"
  (
    cd "$PKI"
    # ECDSA P-256 throughout: every component takes it, and it costs
    # milliseconds where five RSA keys cost seconds.
    key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }
    sign() { # NAME SUBJECT EXTFILE
      key "$1.key"
      openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -extfile "$3" -out "$1.crt" 2>/dev/null
    }
    key ca.key
    openssl req -x509 -new -key ca.key -subj /CN=litterbox-k8s-ca -days 3650 -out ca.crt
    cat >server.ext <<EOF
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$NODE_IP,IP:$SERVICE_IP
EOF
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n' >client.ext
    sign apiserver /CN=kube-apiserver server.ext
    # One identity in system:masters for kubectl and every component: a
    # throwaway test cluster, where simple beats least privilege.
    sign admin "/O=system:masters/CN=admin" client.ext
    key sa.key
    openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
  )
}

# runsc_runtime prints containerd's runtime runsc (gVisor's shim, which
# reads $DIR/runsc.toml for where runsc is and its state goes) when gVisor
# is built; nothing otherwise.
runsc_runtime() {
  gvisor_ready || return 0
  printf 'binary_name = "%s"\nroot = "%s"\n' "$RUNSC" "$DIR/runsc" >"$DIR/runsc.toml"
  cat <<EOF
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc]
      runtime_type = "io.containerd.runsc.v1"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runsc.options]
        TypeUrl = "io.containerd.runsc.v1.options"
        ConfigPath = "$DIR/runsc.toml"
EOF
}

write_configs() {
  cat >"$KUBECONFIG_FILE" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: $CONTEXT
  cluster: {server: "https://$NODE_IP:6443", certificate-authority: "$PKI/ca.crt"}
users:
- name: $CONTEXT-admin
  user: {client-certificate: "$PKI/admin.crt", client-key: "$PKI/admin.key"}
contexts:
- name: $CONTEXT
  context: {cluster: $CONTEXT, user: $CONTEXT-admin, namespace: default}
current-context: $CONTEXT
EOF
  mkdir -p "$DIR/cni"
  cat >"$DIR/cni/10-bridge.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "litterbox-k8s",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "isDefaultGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "dataDir": "$DIR/cni-ipam"}}
  ]
}
EOF
  cat >"$DIR/containerd.toml" <<EOF
version = 2
root = "$DIR/containerd/root"
state = "$DIR/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$CTRD_SOCK"
[ttrpc]
  address = "$CTRD_SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  # Pod network namespaces under our state, not /run/netns.
  netns_mounts_under_state_dir = true
  # Root here lacks CAP_SYS_RESOURCE, so runc cannot give a sandbox a
  # negative oom_score_adj ("can't get final child's PID from pipe: EOF").
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$ROOT/usr/sbin/runc"
        Root = "$DIR/runc"
        SystemdCgroup = false
$(runsc_runtime)
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$ROOT/usr/lib/cni"
    conf_dir = "$DIR/cni"
EOF
  cat >"$DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$PKI/ca.crt"}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: "unix://$CTRD_SOCK"
address: "$NODE_IP"
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
clusterDomain: cluster.local
podLogsDir: "$DIR/pod-logs"
registerNode: true
rotateCertificates: false
serializeImagePulls: false
# The images were imported, not pulled: garbage collection would delete
# busybox between tests and nothing could bring it back.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
EOF
}

# The kernel settings the kubelet insists on (container_manager_linux.go's
# setupKernelTunables) and would otherwise write into the shared kernel:
# vm.overcommit_memory=1 and kernel.panic_on_oops=1 change the whole machine.
KUBELET_SYSCTLS="vm/overcommit_memory=1 vm/panic_on_oom=0 kernel/panic=10 kernel/panic_on_oops=1 kernel/keys/root_maxkeys=1000000 kernel/keys/root_maxbytes=25000000"

# start_kubelet runs the kubelet in a mount namespace of its own where each of
# those files is a bind mount of a file holding the value it wants, so it
# finds them set and writes nothing. $DIR is a shared mount (see up), so the
# volume mounts the kubelet makes below it still reach containerd.
start_kubelet() {
  alive kubelet && return 0
  local binds="" kv
  mkdir -p "$DIR/sysctl"
  for kv in $KUBELET_SYSCTLS; do
    mkdir -p "$(dirname "$DIR/sysctl/${kv%%=*}")"
    echo "${kv#*=}" >"$DIR/sysctl/${kv%%=*}"
    binds="$binds mount --bind $DIR/sysctl/${kv%%=*} /proc/sys/${kv%%=*} &&"
  done
  start kubelet unshare --mount --propagation unchanged sh -c "mount --make-rprivate /proc && $binds exec \"\$0\" \"\$@\"" \
    "$BIN/kubelet" --config="$DIR/kubelet.yaml" --kubeconfig="$KUBECONFIG_FILE" \
    --root-dir="$DIR/kubelet" --cert-dir="$DIR/kubelet/pki" \
    --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --v=1
}

# image_current: the busybox the cluster has is the Docker engine's, or the
# engine cannot say otherwise (it is not running; the cluster needs it only
# to import).
image_current() {
  local id
  [ -f "$DIR/image-id" ] || return 1
  id=$(docker image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null) || return 0
  [ "$(cat "$DIR/image-id")" = "$id" ]
}

# import_images loads the pause image and busybox (from the Docker engine)
# into the cluster's containerd. $DIR/image-id holds the Docker image ID
# imported last, so a rebuilt busybox:latest is imported again.
import_images() {
  if ! ctr_ images ls -q | grep -qxF "$PAUSE_IMAGE"; then
    ctr_ images import "$IMG/pause.tar" >/dev/null
  fi
  image_current && return 0
  local id
  if ! id=$(docker image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null); then
    docker info >/dev/null 2>&1 || bash "$(dirname "$0")/ensure-docker.sh"
    bash "$(dirname "$0")/ensure-busybox.sh"
    id=$(docker image inspect --format '{{.Id}}' "$IMAGE")
  fi
  docker save "$IMAGE" | ctr_ images import - >/dev/null
  echo "$id" >"$DIR/image-id"
  log "imported $IMAGE from the Docker engine"
}


# outside_net makes $EXT_NETNS, the stand-in for what lies outside the
# cluster, joins it to the node's namespace, routes $OUTSIDE_ADDRS there,
# and starts its web server (busybox httpd on port 80 at every address).
outside_net() {
  local a
  if [ ! -e "/run/netns/$EXT_NETNS" ]; then
    ip netns add "$EXT_NETNS"
    ip -n "$EXT_NETNS" link set lo up
  fi
  if ! ip -n "$NETNS" link show "$EXT_NODE_IF" >/dev/null 2>&1; then
    ip -n "$NETNS" link add "$EXT_NODE_IF" type veth peer name "$EXT_IF" netns "$EXT_NETNS"
    ip -n "$NETNS" addr add "$EXT_NODE_IP/30" dev "$EXT_NODE_IF"
    ip -n "$NETNS" link set "$EXT_NODE_IF" up
    ip -n "$EXT_NETNS" addr add "$EXT_IP/30" dev "$EXT_IF"
    ip -n "$EXT_NETNS" link set "$EXT_IF" up
  fi
  ip -n "$EXT_NETNS" route replace default via "$EXT_NODE_IP"
  for a in $OUTSIDE_ADDRS; do
    ip -n "$EXT_NETNS" addr replace "$a/32" dev lo
    ip -n "$NETNS" route replace "$a/32" via "$EXT_IP"
  done
  nsenter --net="/run/netns/$NETNS" sysctl -qw net.ipv4.ip_forward=1
  command -v busybox >/dev/null || apt_install busybox-static
  mkdir -p "$DIR/outside"
  echo "outside the cluster" >"$DIR/outside/index.html"
  start outside nsenter --net="/run/netns/$EXT_NETNS" busybox httpd -f -p 80 -h "$DIR/outside"
}

# netpol_rules sends the first packet of each new connection to or from a
# pod to kube-network-policies' queue (number 100), which accepts or drops
# it by the cluster's NetworkPolicies. The controller writes such rules
# itself as nftables queue statements, which this machine kind's kernel
# lacks (CONFIG_NFT_QUEUE is not set; its syncs fail with "netlink receive:
# no such file or directory", harmlessly); it has xtables' NFQUEUE target,
# so these are iptables rules in the node's namespace, in a chain of their
# own. --queue-bypass: with the controller stopped, packets pass, and the
# node enforces nothing, as the bridge plugin alone. The node's own root
# processes are let through, as the controller's rules do.
NETPOL_CHAIN=LITTERBOX-NETPOL
netpol_rules() {
  local ipt="nsenter --net=/run/netns/$NETNS iptables -w -t mangle"
  $ipt -N "$NETPOL_CHAIN" 2>/dev/null || $ipt -F "$NETPOL_CHAIN"
  $ipt -A "$NETPOL_CHAIN" -m owner --uid-owner 0 -j RETURN
  $ipt -A "$NETPOL_CHAIN" -s "$POD_CIDR" -m conntrack --ctstate NEW -j NFQUEUE --queue-num 100 --queue-bypass
  $ipt -A "$NETPOL_CHAIN" -d "$POD_CIDR" -m conntrack --ctstate NEW -j NFQUEUE --queue-num 100 --queue-bypass
  $ipt -C POSTROUTING -j "$NETPOL_CHAIN" 2>/dev/null || $ipt -A POSTROUTING -j "$NETPOL_CHAIN"
}

# netpol_ready: kube-network-policies listens on its queue (number 100) in the
# node's namespace, which it opens once its nftables table is written.
netpol_ready() { alive kube-network-policies && nsenter --net="/run/netns/$NETNS" awk '$1 == 100 { found = 1 } END { exit !found }' /proc/net/netfilter/nfnetlink_queue; }

healthy() {
  local d
  for d in etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-network-policies outside; do alive "$d" || return 1; done
  nsenter --net="/run/netns/$NETNS" iptables -w -t mangle -C POSTROUTING -j "$NETPOL_CHAIN" 2>/dev/null || return 1
  readyz && node_ready && gvisor_current
}

# gvisor_current: the cluster offers gVisor exactly when it is built: the
# running containerd has the runtime runsc and the RuntimeClass is there;
# without gVisor, no RuntimeClass says otherwise.
gvisor_current() {
  local class=/apis/node.k8s.io/v1/runtimeclasses/$GVISOR_CLASS
  if gvisor_wanted; then
    gvisor_ready && grep -qF 'runtimes.runsc]' "$DIR/containerd.toml.started" 2>/dev/null && api "$class"
  elif api "$class"; then
    return 1
  fi
}

gvisor_said() {
  if gvisor_ready; then
    echo "gVisor: RuntimeClass $GVISOR_CLASS"
  elif [ -f "$SHIM.failed" ]; then
    echo "no gVisor: its shim did not build, see $SHIM.failed (remove it to try again)"
  else
    echo "no gVisor: runsc did not build"
  fi
}

# gvisor_class makes the RuntimeClass $GVISOR_CLASS, whose pods containerd
# runs with runsc, when gVisor is built, and removes it otherwise.
gvisor_class() {
  if gvisor_ready; then
    echo "{\"apiVersion\": \"node.k8s.io/v1\", \"kind\": \"RuntimeClass\", \"metadata\": {\"name\": \"$GVISOR_CLASS\"}, \"handler\": \"runsc\"}" | kc apply -f - >/dev/null
  else
    kc delete runtimeclass "$GVISOR_CLASS" --ignore-not-found >/dev/null
  fi
}

# restart_containerd_if_changed stops a containerd started with another
# configuration than $DIR/containerd.toml (gVisor built since, say), for up
# to start it again: it reads its configuration once. The pods keep running
# (their shims outlive it) and the kubelet reconnects.
restart_containerd_if_changed() {
  alive containerd || return 0
  cmp -s "$DIR/containerd.toml" "$DIR/containerd.toml.started" 2>/dev/null && return 0
  log "containerd's configuration changed: restarting it (pods keep running)"
  kill -TERM "$(cat "$PIDS/containerd.pid")" 2>/dev/null || true
  for _ in $(seq 1 100); do
    alive containerd || break
    sleep 0.1
  done
  kill_daemons containerd
}

up() {
  if [ "$(id -u)" != 0 ]; then
    die "this sets up a network namespace, containerd and a kubelet: run it as root"
  fi
  if healthy && image_current; then
    log "cluster answers at https://$NODE_IP:6443 (KUBECONFIG=$KUBECONFIG_FILE, context $CONTEXT, namespace default; $(gvisor_said))"
    return 0
  fi
  build
  mkdir -p "$DIR" "$PIDS" "$LOGS"
  # $DIR as a shared mount of its own: mounts below it propagate between the
  # host's mount namespace and the kubelet's (the host's are all private).
  if ! mountpoint -q "$DIR"; then
    mount --bind "$DIR" "$DIR"
    mount --make-shared "$DIR"
  fi
  write_pki
  write_configs
  # A stable path to the kubectl of the cluster's version, for the tests.
  mkdir -p "$DIR/bin"
  ln -sfn "$KUBECTL" "$DIR/bin/kubectl"

  if [ ! -e "/run/netns/$NETNS" ]; then
    ip netns add "$NETNS"
    ip -n "$NETNS" link set lo up
  fi
  if ! ip link show "$HOST_IF" >/dev/null 2>&1; then
    ip link add "$HOST_IF" type veth peer name "$NS_IF" netns "$NETNS"
    ip addr add "$HOST_IP/30" dev "$HOST_IF"
    ip link set "$HOST_IF" up
    ip -n "$NETNS" addr add "$NODE_IP/30" dev "$NS_IF"
    ip -n "$NETNS" link set "$NS_IF" up
  fi
  # No default route in the namespace: pods reach each other, the node and
  # the stand-ins of the outside, nothing beyond.
  outside_net
  netpol_rules

  # Host paths containerd 1.6 and the kubelet use whatever they are told:
  # record the ones that are not there yet, so down removes exactly those.
  if ! alive containerd && ! alive kubelet; then
    for d in /run/containerd /var/lib/cni /var/lib/kubelet; do
      [ -e "$d" ] || grep -qxF "$d" "$DIR/created-host-dirs" 2>/dev/null || echo "$d" >>"$DIR/created-host-dirs"
    done
  fi
  # etcd, the apiserver and containerd start together: the apiserver retries
  # etcd, and the images go into containerd while the apiserver gets ready
  # (the longest wait, about 5 s). The kubelet retries the apiserver too.
  start etcd "$BIN/etcd" --name litterbox --data-dir "$DIR/etcd" \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster litterbox=http://127.0.0.1:2380 --listen-metrics-urls http://127.0.0.1:2381 \
    --unsafe-no-fsync --log-level warn
  start kube-apiserver "$BIN/kube-apiserver" --advertise-address="$NODE_IP" --bind-address=0.0.0.0 --secure-port=6443 \
    --etcd-servers=http://127.0.0.1:2379 --service-cluster-ip-range="$SERVICE_CIDR" \
    --client-ca-file="$PKI/ca.crt" --tls-cert-file="$PKI/apiserver.crt" --tls-private-key-file="$PKI/apiserver.key" \
    --kubelet-client-certificate="$PKI/admin.crt" --kubelet-client-key="$PKI/admin.key" \
    --kubelet-preferred-address-types=InternalIP \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$PKI/sa.pub" --service-account-signing-key-file="$PKI/sa.key" \
    --authorization-mode=Node,RBAC --profiling=false
  restart_containerd_if_changed
  # gVisor's shim is found on containerd's PATH, by the runtime's name.
  start containerd env PATH="$(dirname "$SHIM"):$ROOT/usr/bin:$ROOT/usr/sbin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "$ROOT/usr/bin/containerd" --config "$DIR/containerd.toml"
  cp "$DIR/containerd.toml" "$DIR/containerd.toml.started"
  wait_for "containerd" 60 ctr_ version
  import_images
  start_kubelet
  # The controller manager gives up on an apiserver that is not there
  # within 10 s: start it (and the scheduler) once the apiserver is ready.
  wait_for "apiserver /readyz" 120 readyz
  start kube-controller-manager "$BIN/kube-controller-manager" --kubeconfig="$KUBECONFIG_FILE" \
    --authentication-kubeconfig="$KUBECONFIG_FILE" --authorization-kubeconfig="$KUBECONFIG_FILE" \
    --bind-address=127.0.0.1 --leader-elect=false --use-service-account-credentials=false \
    --service-account-private-key-file="$PKI/sa.key" --root-ca-file="$PKI/ca.crt" \
    --cluster-signing-cert-file="$PKI/ca.crt" --cluster-signing-key-file="$PKI/ca.key" \
    --allocate-node-cidrs=false --profiling=false
  start kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$KUBECONFIG_FILE" \
    --authentication-kubeconfig="$KUBECONFIG_FILE" --authorization-kubeconfig="$KUBECONFIG_FILE" \
    --bind-address=127.0.0.1 --leader-elect=false --profiling=false
  start kube-network-policies "$NETPOL" --kubeconfig="$KUBECONFIG_FILE" --hostname-override="$NODE_NAME" --v=1
  wait_for "Ready node $NODE_NAME" 180 node_ready
  # It is what enforces NetworkPolicy: a create before it listens
  # would find the cluster unisolated.
  wait_for "kube-network-policies on its queue" 60 netpol_ready
  # A namespace's pods are refused until its default service account exists.
  wait_for "default service account" 60 kc -n default get serviceaccount default
  gvisor_class
  log "cluster up in $(elapsed) at https://$NODE_IP:6443 (KUBECONFIG=$KUBECONFIG_FILE, context $CONTEXT, namespace default; kubectl $KUBECTL; $(gvisor_said))"
}

main() {
  case "${1:-up}" in
  env)
    echo "KUBECONFIG=$KUBECONFIG_FILE"
    echo "LITTERBOX_KUBECTL=$KUBECTL"
    ;;
  build | --build-only) build ;;
  down | --down)
    [ "$(id -u)" = 0 ] || die "stopping the cluster needs root"
    down
    ;;
  up) up ;;
  *)
    echo "usage: $0 [up|build|env|down]" >&2
    exit 2
    ;;
  esac
}

# On one line with main: bash reads a script as it runs it, and a build takes
# long enough for a checkout to change this file under it; nothing after
# this line is ever read.
main "$@"; exit
