#!/bin/sh
# Build first: go build -o /tmp/sw/litterbox . (or set LB to a litterbox binary).
# bench-secrets-create.sh N: litterbox create then delete, alternating one secret declared
# and none, N each; prints each create's wall time in ms.
set -e
N=${1:-9}
LB=${LB:-/tmp/sw/litterbox}
export LITTERBOX_LABELS=dev.litterbox.bench=secrets-create
export LB_BENCH_TOKEN=sk-bench-0123456789abcdef
export HOME=${TMPDIR:-/tmp}/lb-bench-secrets-home; mkdir -p $HOME
R=${TMPDIR:-/tmp}/lb-bench-secrets-repo; rm -rf $R; mkdir -p $R; cd $R
git init -q; for i in $(seq 1 100); do echo "file $i" > f$i.txt; done
git add .; git -c user.name=b -c user.email=b@b commit -qm init
secret='[secrets.api]
source = "env:LB_BENCH_TOKEN"
hosts = ["api.example.com"]
header = "Authorization: Bearer {}"'
for i in $(seq 1 $N); do
  for kind in none secret; do
    if [ $kind = secret ]; then printf '%s\n' "$secret" > .litterbox.local.toml; else rm -f .litterbox.local.toml; fi
    s=$(date +%s%N); $LB create b$i$kind >/dev/null; e=$(date +%s%N)
    echo "$kind $(( (e-s)/1000000 ))"
    $LB delete --force b$i$kind >/dev/null
  done
done
