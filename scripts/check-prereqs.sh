#!/usr/bin/env bash
# Checks what cannot be installed by the project itself: Node.js 20.19+ with npm (the CLI require()s the page's
# stream parser, an ES module, which Node does from 20.19 on).
set -euo pipefail
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "klea: Node.js 20.19 or newer with npm is required (https://nodejs.org)." >&2
  exit 1
fi
if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)'; then
  echo "klea: Node.js 20.19 or newer is required; this is $(node --version)." >&2
  exit 1
fi
