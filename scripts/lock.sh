#!/usr/bin/env bash
# Re-resolves the pinned Python dependencies (with hashes) into the two lock files that
# scripts/setup.sh installs from:
#   requirements.lock       the tool and its build tools (setuptools, wheel, maturin)
#   requirements-dev.lock   the same plus the test and lint dependencies (the `dev` extra)
# Both are resolved together (the dev lock constrains the tool's lock), for CPython 3.11 and later.
#   scripts/lock.sh             keep every version already pinned where it still fits (adds, removes)
#   scripts/lock.sh --upgrade   move every dependency to the newest version the registry serves
# uv (from PyPI) does the resolving; it is installed into a throw-away virtualenv.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
upgrade=()
if [[ "${1:-}" == "--upgrade" ]]; then upgrade=(--upgrade); fi
tools="$(mktemp -d)"
trap 'rm -rf "$tools"' EXIT
python3 -m venv "$tools/venv"
"$tools/venv/bin/python" -m pip install --quiet uv
uv="$tools/venv/bin/uv"
printf 'setuptools>=77\nwheel\nmaturin>=1.7,<2\n' > "$tools/build.in"
common=(--generate-hashes --universal --python-version 3.11 --no-header --quiet)
"$uv" pip compile pyproject.toml "$tools/build.in" --extra dev "${common[@]}" "${upgrade[@]}" \
  -o requirements-dev.lock
# the tool's lock takes the dev lock's versions, so `setup.sh` and `setup.sh --dev` agree
"$uv" pip compile pyproject.toml "$tools/build.in" -c requirements-dev.lock "${common[@]}" -o requirements.lock
echo "lock: wrote requirements.lock and requirements-dev.lock"
