#!/usr/bin/env bash
# Installs schemathesis from PyPI into .tools/fuzz-venv (once) and fuzzes the API (see scripts/fuzz-api.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
SCHEMATHESIS_VERSION="${SCHEMATHESIS_VERSION:-4.32.5}"
venv=.tools/fuzz-venv
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
  echo "fuzz-api: installing schemathesis==$SCHEMATHESIS_VERSION from PyPI into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi
node dist/scripts/fuzz-api.js
