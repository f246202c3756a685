#!/usr/bin/env bash
# fuzz.sh: run every fuzz target of the module briefly, one after another:
# CI's fuzz smoke (`make fuzz`). Targets are found in the source (func FuzzX
# in *_test.go), so a new one takes part as soon as it exists.
#
#   FUZZTIME=30s scripts/fuzz.sh    time per target (default 5s)
#   scripts/fuzz.sh ./git ./docker  only these package directories
#
# A target that fails leaves its input in that package's testdata/fuzz/FuzzX/
# (commit it with the fix: it becomes a seed of the target); the script goes
# on with the rest and exits 1 at the end, naming the failures.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(.)

# fuzz_one runs $target in $pkg. Go 1.26's fuzz coordinator can report a bare
# "context deadline exceeded" at the end of a -fuzztime window when a loaded
# machine starves its workers (go.dev/issue/75804, fixed in Go 1.27): no input
# is written and nothing fails on replay. Such a run is retried once; a run
# that writes a failing input fails at once.
fuzz_one() {
  local tries=2
  while :; do
    if $GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" >"$log" 2>&1; then
      return 0
    fi
    tries=$((tries - 1))
    if [ $tries -gt 0 ] && grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
      echo "fuzz: retry $target: the fuzz coordinator's deadline race (go.dev/issue/75804), no input written"
      continue
    fi
    return 1
  done
}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=()
count=0
while IFS= read -r file; do
  pkg=./$(dirname "${file#./}")
  for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
    count=$((count + 1))
    start=$SECONDS
    if fuzz_one; then
      execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 || true)
      printf 'fuzz: ok    %-28s %-12s %s (%ds)\n' "$target" "$pkg" "${execs:-}" $((SECONDS - start))
    else
      printf 'fuzz: FAIL  %-28s %s\n' "$target" "$pkg"
      sed 's/^/    /' "$log"
      failed+=("$pkg $target")
    fi
  done
done < <(grep -rl --include='*_test.go' '^func Fuzz' "${dirs[@]}" | sort)

echo "fuzz: $count targets, ${FUZZTIME} each, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: failed: %s\n' "${failed[@]}"
  exit 1
fi
