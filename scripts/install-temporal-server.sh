#!/usr/bin/env bash
# Builds the Temporal server and temporal-sql-tool from the Go module go.temporal.io/server (the Go module proxy is
# the registry), and keeps them with the module's PostgreSQL schemas and its config template in a cache outside the
# clone, keyed by version:
#
#   ${KLEA_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/klea}/temporal-server-<version>/
#     bin/temporal-server  bin/temporal-sql-tool  schema/postgresql/v12/{temporal,visibility}/  config/development-postgres12.yaml
#
# A build takes about 15 minutes on two cores, so it is done once per machine: when the cache is complete (its
# .complete stamp is there and the server runs) this does nothing. Prints the cache directory on its last line.
set -euo pipefail

version="${KLEA_TEMPORAL_SERVER_VERSION:-1.32.2}"
toolchain="${KLEA_TEMPORAL_GO_TOOLCHAIN:-go1.26.10}"
cache_root="${KLEA_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/klea}"
dest="$cache_root/temporal-server-$version"

say() { printf 'install-temporal-server: %s\n' "$*" >&2; }

if [ -f "$dest/.complete" ] && "$dest/bin/temporal-server" --version >/dev/null 2>&1 \
  && [ -x "$dest/bin/temporal-sql-tool" ]; then
  say "cached: $dest ($("$dest/bin/temporal-server" --version 2>&1 | head -n 1))"
  echo "$dest"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  say "ERROR: building the Temporal server needs Go (1.21 or later, which fetches $toolchain through the module proxy)."
  say "Install Go, or put a built server in $dest (bin/temporal-server, bin/temporal-sql-tool, schema/, config/)."
  exit 1
fi

mkdir -p "$cache_root"
work="$(mktemp -d "$cache_root/.temporal-server-$version.XXXXXX")"
trap 'rm -rf "$work"' EXIT
export GOTOOLCHAIN="$toolchain" GOFLAGS="-mod=mod" CGO_ENABLED=0

say "fetching go.temporal.io/server@v$version through the Go module proxy"
module_dir="$(cd "$work" && go mod download -json "go.temporal.io/server@v$version" \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$module_dir" ] || [ ! -d "$module_dir/schema/postgresql/v12" ]; then
  say "ERROR: go.temporal.io/server@v$version has no PostgreSQL schema at schema/postgresql/v12"
  exit 1
fi

say "building temporal-server and temporal-sql-tool v$version with $toolchain (about 15 minutes on two cores)"
started=$SECONDS
GOBIN="$work/gobin" go install -trimpath -ldflags "-s -w" \
  "go.temporal.io/server/cmd/server@v$version" "go.temporal.io/server/cmd/tools/sql@v$version"
mkdir -p "$work/out/bin" "$work/out/schema/postgresql" "$work/out/config"
mv "$work/gobin/server" "$work/out/bin/temporal-server"
mv "$work/gobin/sql" "$work/out/bin/temporal-sql-tool"
cp -R "$module_dir/schema/postgresql/v12" "$work/out/schema/postgresql/v12"
cp "$module_dir/config/development-postgres12.yaml" "$work/out/config/"
chmod -R u+w "$work/out"
"$work/out/bin/temporal-server" --version >/dev/null
printf '%s\n' "$version" > "$work/out/.complete"

rm -rf "$dest"
mv "$work/out" "$dest"
say "built in $(((SECONDS - started) / 60)) min: $dest"
echo "$dest"
