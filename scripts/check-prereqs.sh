#!/usr/bin/env bash
# Checks what cannot be installed by the project itself: Node.js 20.3+ with npm.
set -euo pipefail
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "klea: Node.js 20.3 or newer with npm is required (https://nodejs.org)." >&2
  exit 1
fi
if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=3)?0:1)'; then
  echo "klea: Node.js 20.3 or newer is required; this is $(node --version)." >&2
  exit 1
fi
