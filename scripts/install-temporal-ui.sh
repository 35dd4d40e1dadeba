#!/usr/bin/env bash
# Builds the Temporal Web UI server from the Go module github.com/temporalio/ui-server/v2 (the Go module proxy is the
# registry; the module carries the built page), for `make cluster`, and keeps it with the module's configuration in a
# cache outside the clone, keyed by version:
#
#   ${KLEA_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/klea}/temporal-ui-<version>/   bin/temporal-ui  config/
#
# A no-op when the cache is complete. Prints the cache directory on its last line.
set -euo pipefail

version="${KLEA_TEMPORAL_UI_VERSION:-2.56.4}"
toolchain="${KLEA_TEMPORAL_GO_TOOLCHAIN:-go1.26.10}"
cache_root="${KLEA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/klea}"
dest="$cache_root/temporal-ui-$version"

say() { printf 'install-temporal-ui: %s\n' "$*" >&2; }

if [ -f "$dest/.complete" ] && [ -x "$dest/bin/temporal-ui" ] && [ -f "$dest/config/docker.yaml" ]; then
  say "cached: $dest"
  echo "$dest"
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  say "ERROR: building the Temporal UI server needs Go (1.21 or later)."
  exit 1
fi

mkdir -p "$cache_root"
work="$(mktemp -d "$cache_root/.temporal-ui-$version.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export GOTOOLCHAIN="$toolchain" GOFLAGS="-mod=mod" CGO_ENABLED=0

say "fetching github.com/temporalio/ui-server/v2@v$version through the Go module proxy"
module_dir="$(cd "$work" && go mod download -json "github.com/temporalio/ui-server/v2@v$version" \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$module_dir" ] || [ ! -f "$module_dir/config/docker.yaml" ]; then
  say "ERROR: github.com/temporalio/ui-server/v2@v$version has no config/docker.yaml"
  exit 1
fi
say "building the Temporal UI server v$version with $toolchain"
started=$SECONDS
GOBIN="$work/gobin" go install -trimpath -ldflags "-s -w" "github.com/temporalio/ui-server/v2/cmd/server@v$version"
mkdir -p "$work/out/bin"
mv "$work/gobin/server" "$work/out/bin/temporal-ui"
cp -R "$module_dir/config" "$work/out/config"
chmod -R u+w "$work/out"
printf '%s\n' "$version" > "$work/out/.complete"
rm -rf "$dest"
mv "$work/out" "$dest"
say "built in $(((SECONDS - started) / 60)) min: $dest"
echo "$dest"
