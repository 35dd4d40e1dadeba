#!/usr/bin/env bash
# Installs mini-swe-agent, the peer `make eval PEER=1` runs beside Klea, from PyPI into its own virtual environment
# .tools/mini-swe-agent/ (the `mini` command in its bin/). Pinned: mini-swe-agent and litellm, the library it
# calls models with, so that the peer's figures are those of a known version.
# Idempotent: a second run finds both versions installed and does nothing.
set -euo pipefail

MINI_SWE_AGENT_VERSION="${MINI_SWE_AGENT_VERSION:-2.4.6}"
LITELLM_VERSION="${MINI_SWE_AGENT_LITELLM_VERSION:-1.110.2}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.tools/mini-swe-agent"

say() { printf 'install-mini-swe-agent: %s\n' "$*"; }
die() {
  say "ERROR: $*" >&2
  exit 1
}

installed() {
  "$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mini-swe-agent"), m.version("litellm"))' \
    2>/dev/null || true
}

if [ -x "$venv/bin/mini" ] && [ "$(installed)" = "$MINI_SWE_AGENT_VERSION $LITELLM_VERSION" ]; then
  say "already installed: mini-swe-agent $MINI_SWE_AGENT_VERSION (litellm $LITELLM_VERSION) in $venv"
  exit 0
fi

python=""
for candidate in python3 python; do
  if command -v "$candidate" >/dev/null 2>&1 &&
    "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null &&
    "$candidate" -m venv --help >/dev/null 2>&1; then
    python="$candidate"
    break
  fi
done
[ -n "$python" ] || die "no Python 3.10+ with venv on PATH (mini-swe-agent needs it)"

export PIP_ROOT_USER_ACTION=ignore
say "installing mini-swe-agent==$MINI_SWE_AGENT_VERSION and litellm==$LITELLM_VERSION from PyPI into $venv"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
  "mini-swe-agent==$MINI_SWE_AGENT_VERSION" "litellm==$LITELLM_VERSION" ||
  die "pip could not install mini-swe-agent==$MINI_SWE_AGENT_VERSION with litellm==$LITELLM_VERSION"
[ "$(installed)" = "$MINI_SWE_AGENT_VERSION $LITELLM_VERSION" ] || die "the versions in $venv are $(installed)"
say "installed mini-swe-agent $MINI_SWE_AGENT_VERSION (litellm $LITELLM_VERSION) in $venv"
