#!/usr/bin/env bash
# scripts/release.sh (make release): cross-builds litterbox for every release
# target into dist/, one archive per target, litterbox_VERSION_OS_ARCH.tar.gz
# (the static binary, README.md and LICENSE when there is one), and SHA256SUMS
# over the archives.
#
# Environment: VERSION and COMMIT (what --version says; default git describe
# and HEAD), TARGETS (default "linux/amd64 linux/arm64 darwin/amd64
# darwin/arm64"), DIST (default dist), GO (default go).
#
# Every target is tried. One that fails to build is named with the compiler's
# errors; then SHA256SUMS is not written (an incomplete release must not look
# like a complete one) and the script exits 1. Only this script's own files in
# DIST are replaced; nothing else there is touched.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || true)}
TARGETS=${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
DIST=${DIST:-dist}
# Archive entries get the commit's time, so two runs on one commit give the
# same archives.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}

case $VERSION in
  */* | '') echo "release: VERSION '$VERSION' cannot be part of a file name" >&2; exit 2 ;;
esac

buildinfo=github.com/litterbox-dev/litterbox/internal/buildinfo
ldflags="-s -w -X $buildinfo.version=$VERSION -X $buildinfo.commit=$COMMIT"

mkdir -p "$DIST"
rm -f "$DIST"/litterbox_*.tar.gz "$DIST/SHA256SUMS"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

built=() failed=()
for target in $TARGETS; do
  os=${target%%/*} arch=${target#*/}
  name=litterbox_${VERSION}_${os}_${arch}
  mkdir -p "$stage/$name"
  echo "release: building $target" >&2
  # CGO_ENABLED=0: a static binary, the same whatever C toolchain the
  # building machine has.
  if ! CGO_ENABLED=0 GOOS=$os GOARCH=$arch "$GO" build -trimpath -ldflags "$ldflags" \
      -o "$stage/$name/litterbox" . 2>"$stage/$name.err"; then
    echo "release: FAILED $target (GOOS=$os GOARCH=$arch):" >&2
    sed 's/^/    /' "$stage/$name.err" >&2
    failed+=("$target")
    continue
  fi
  cp README.md "$stage/$name/"
  [ ! -f LICENSE ] || cp LICENSE "$stage/$name/"
  tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    -C "$stage" -c "$name" | gzip -n >"$DIST/$name.tar.gz"
  built+=("$name.tar.gz")
  echo "release: built $DIST/$name.tar.gz" >&2
done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "release: ${#failed[@]} of $(wc -w <<<"$TARGETS") targets failed: ${failed[*]}; SHA256SUMS not written" >&2
  exit 1
fi
(cd "$DIST" && sha256sum "${built[@]}" >SHA256SUMS)
echo "release: $VERSION ($COMMIT): ${#built[@]} archives and SHA256SUMS in $DIST" >&2
