#!/usr/bin/env bash
# Installs Debian's Chromium for the browser tests when it is missing (never a downloaded browser build).
# Idempotent. Set KLEA_CHROMIUM to use another Chromium binary.
set -euo pipefail
say() { printf 'install-chromium: %s\n' "$*"; }

bin="${KLEA_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  say "already installed: $bin ($("$bin" --version 2>/dev/null | head -n 1))"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  say "ERROR: no Chromium at $bin and no apt-get to install it. Install Chromium and set KLEA_CHROMIUM=/path/to/chromium." >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" != "0" ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    say "ERROR: installing Chromium needs root (apt-get install chromium)." >&2
    exit 1
  fi
fi
say "installing chromium from Debian's packages"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
say "installed: $(/usr/bin/chromium --version 2>/dev/null | head -n 1)"
