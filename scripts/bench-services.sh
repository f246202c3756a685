#!/usr/bin/env bash
# bench-services.sh: figures for issue 5, printed, never asserted.
#   - create (and delete) of a small repository without ports vs with two
#     named ports, alternating, median of N runs each;
#   - `litterbox service start` of busybox httpd until the first successful
#     HTTP answer through its named port on the host, median of N runs.
# Usage: scripts/bench-services.sh [N]   (needs docker, git, curl; builds litterbox)
set -euo pipefail
N=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
bin=$work/litterbox
label="dev.litterbox.bench=services-$$"
export LITTERBOX_LABELS=$label
cleanup() {
	docker ps -aq --filter "label=$label" | xargs -r docker rm -f >/dev/null 2>&1 || true
	docker network ls -q --filter "label=$label" | xargs -r docker network rm >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
(cd "$root" && go build -o "$bin" .)

ms() { date +%s%3N; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

mkrepo() { # DIR CONFIG
	mkdir -p "$1/www" && echo "hello" >"$1/www/index.html" && printf '%s' "$2" >"$1/.litterbox.toml"
	git -C "$1" init -q && git -C "$1" add -A && git -C "$1" -c user.name=b -c user.email=b@b commit -qm init
}
mkrepo "$work/plain" 'setup = ["true"]'
mkrepo "$work/ports" 'setup = ["true"]
[ports]
web = 8080
api = 3000
[services.web]
command = ["httpd", "-f", "-p", "8080", "-h", "/src/www"]
'

: >"$work/plain.t"
: >"$work/ports.t"
for i in $(seq "$N"); do
	for kind in plain ports; do
		t0=$(ms)
		(cd "$work/$kind" && "$bin" create "b$i" >/dev/null)
		echo $(($(ms) - t0)) >>"$work/$kind.t"
		(cd "$work/$kind" && "$bin" delete --force "b$i" >/dev/null)
	done
done
p=$(median <"$work/plain.t")
q=$(median <"$work/ports.t")
echo "create without ports:     median ${p} ms  ($(tr '\n' ' ' <"$work/plain.t"))"
echo "create with two ports:    median ${q} ms  ($(tr '\n' ' ' <"$work/ports.t"))"
echo "difference:               $(awk -v a="$q" -v b="$p" 'BEGIN{print a-b}') ms"

cd "$work/ports"
"$bin" create svc >/dev/null
url=$("$bin" ports svc | awk '$1=="web"{print $4}')
: >"$work/http.t"
for i in $(seq "$N"); do
	t0=$(ms)
	"$bin" service svc web start >/dev/null 2>&1
	until curl -fsS -o /dev/null --max-time 1 "$url/index.html" 2>/dev/null; do sleep 0.01; done
	echo $(($(ms) - t0)) >>"$work/http.t"
	"$bin" service svc web stop >/dev/null 2>&1
done
echo "service start to first HTTP answer: median $(median <"$work/http.t") ms  ($(tr '\n' ' ' <"$work/http.t"))"
"$bin" delete --force svc >/dev/null
