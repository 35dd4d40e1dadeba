#!/usr/bin/env bash
# Installs a Debian package when the program it provides is missing. Idempotent.
#   scripts/install-debian-package.sh PACKAGE BINARY [VERSION_FLAG]
# Used for Chromium (browser tests; never a downloaded browser build) and bubblewrap (the command sandbox).
set -euo pipefail
pkg="$1"
bin="$2"
version_flag="${3:---version}"
say() { printf 'install-%s: %s\n' "$pkg" "$*"; }

if [ -x "$bin" ] && "$bin" "$version_flag" >/dev/null 2>&1; then
  say "already installed: $bin ($("$bin" "$version_flag" 2>/dev/null | head -n 1))"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  say "ERROR: no $bin and no apt-get to install it. Install the $pkg package." >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    say "ERROR: installing $pkg needs root (apt-get install $pkg)." >&2
    exit 1
  fi
fi
say "installing $pkg from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
# The package lists may be stale or missing on a fresh machine: refresh once if the first try fails.
$sudo apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null 2>&1 || {
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null
}
say "installed: $("$bin" "$version_flag" 2>/dev/null | head -n 1)"
