#!/bin/sh
# scripts/release.sh VERSION [OUTDIR]
#
# Builds the release VERSION (v1.2.3) of idemgate from this checkout's
# commit: static binaries (CGO_ENABLED=0) for linux/amd64 and linux/arm64,
# with the version, the commit and the commit's date stamped in (what
# `idemgate version`, GET /v1/status, GET /v1/cluster, the Redis face's INFO
# and the idemgate_build_info metric show), and their SHA-256 checksums in
# SHA256SUMS. OUTDIR defaults to dist/VERSION.
#
# The build is reproducible: -trimpath, and the date is the commit's, so
# the same commit gives the same bytes (check a release with
# `sha256sum -c SHA256SUMS`). A checkout with uncommitted changes is
# refused: a release names one commit. PLATFORMS (space-separated GOOS/GOARCH)
# overrides the platforms; ALLOW_DIRTY=1 builds a modified checkout anyway,
# its commit marked "-modified" (for tests, never for a release).
set -eu

usage="usage: scripts/release.sh VERSION [OUTDIR]   (VERSION such as v1.2.3)"
version=${1:-}
case $version in
v[0-9]*.[0-9]*.[0-9]*) ;;
*) echo "$usage" >&2; exit 2 ;;
esac
case $version in
*[!A-Za-z0-9.+-]*) echo "release.sh: VERSION $version: only letters, digits, '.', '+', '-'" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root/dist/$version}
platforms=${PLATFORMS:-linux/amd64 linux/arm64}

commit=$(git -C "$root" rev-parse HEAD)
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]; then
	if [ "${ALLOW_DIRTY:-}" != 1 ]; then
		echo "release.sh: the checkout has uncommitted changes; commit them first (a release names one commit)" >&2
		exit 1
	fi
	commit=$commit-modified
fi
date=$(TZ=UTC git -C "$root" log -1 --date=iso-strict-local --format=%cd HEAD)

pkg=github.com/idemgate/idemgate/version
ldflags="-s -w -X $pkg.Release=$version -X $pkg.Commit=$commit -X $pkg.Date=$date"

mkdir -p "$out"
rm -f "$out/SHA256SUMS"
for p in $platforms; do
	os=${p%/*}
	arch=${p#*/}
	bin=idemgate-$version-$os-$arch
	echo "release.sh: $bin ($commit, $date)"
	(cd "$root" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false \
		-ldflags "$ldflags" -o "$out/$bin" .)
done
(cd "$out" && sha256sum idemgate-"$version"-* > SHA256SUMS)
echo "release.sh: $out/SHA256SUMS"
cat "$out/SHA256SUMS"
