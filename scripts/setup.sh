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
# the native core (audit-log parser, POSIX replay loop, event-key sort): Rust, built with maturin and cargo
# (crates from crates.io). Optional for the tool, which falls back to pure Python without it;
# required for the test suite, which checks both paths against each other.
# rustup installs cargo in ~/.cargo/bin, which a non-login shell may not have on PATH
if ! command -v cargo >/dev/null 2>&1 && [[ -x "$HOME/.cargo/bin/cargo" ]]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if command -v cargo >/dev/null 2>&1; then
  .venv/bin/python -m pip install --quiet ./native
elif [[ -n "$extras" ]]; then
  echo "setup: cargo (Rust) is needed to build the native core for the tests; install it with rustup" >&2
  exit 1
else
  echo "setup: cargo not found; the native core is not built (pure-Python parser, replay loop and numpy sort)" >&2
fi
if [[ -n "$extras" ]]; then
  scripts/install_test_deps.sh
fi
