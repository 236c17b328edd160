#!/usr/bin/env bash
# Creates .venv in the checkout and installs MimesisBench into it.
#   scripts/setup.sh          the tool itself
#   scripts/setup.sh --dev    plus the test dependencies
# Only PyPI is needed. Python >= 3.10 must be on PATH as python3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
extras=""
if [[ "${1:-}" == "--dev" ]]; then extras="[dev]"; fi
if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip >/dev/null
.venv/bin/python -m pip install --quiet -e ".${extras}"
