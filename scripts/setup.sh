#!/usr/bin/env bash
# Creates .venv in the checkout and installs MimesisBench into it.
#   scripts/setup.sh          the tool itself
#   scripts/setup.sh --dev    plus the test dependencies (Python ones from PyPI; system ones,
#                             a headless Chromium, from Debian via scripts/install_test_deps.sh)
# Python >= 3.10 must be on PATH as python3.
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
if [[ -n "$extras" ]]; then
  scripts/install_test_deps.sh
fi
