#!/usr/bin/env bash
# Creates .venv in the checkout and installs MimesisBench into it, with every Python dependency at
# the version (and hash) pinned in the lock files, and the native core built from Cargo.lock.
#   scripts/setup.sh                 the tool itself (requirements.lock)
#   scripts/setup.sh --dev           plus the test and lint dependencies (requirements-dev.lock) and
#                                    the system ones (a headless Chromium, Prometheus) from Debian
#                                    via scripts/install_test_deps.sh
#   scripts/setup.sh --upgrade-deps  first moves the locks to the newest versions the registry
#                                    serves (scripts/lock.sh --upgrade), on purpose; combine with --dev
# Python >= 3.11 must be on PATH as python3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
dev=0
upgrade=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    --upgrade-deps) upgrade=1 ;;
    *) echo "setup: unknown option $arg (expected --dev, --upgrade-deps)" >&2; exit 2 ;;
  esac
done
if [[ $upgrade -eq 1 ]]; then
  scripts/lock.sh --upgrade
fi
lock=requirements.lock
if [[ $dev -eq 1 ]]; then lock=requirements-dev.lock; fi
if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
pip=(.venv/bin/python -m pip --disable-pip-version-check)
# pinned and hash-checked: what a new machine gets does not depend on what the registry serves today
"${pip[@]}" install --quiet --require-hashes -r "$lock"
# the package itself: its dependencies (extras included) and build tools (setuptools, wheel, maturin)
# are in the lock, so nothing more is resolved here
"${pip[@]}" install --quiet --no-deps --no-build-isolation -e .
# the native core (audit-log parser, POSIX replay loop, event-key sort): Rust, built with maturin and
# cargo from native/Cargo.lock (--locked: the crates it pins, or an error). Optional for the tool,
# which falls back to pure Python without it; required for the test suite, which checks both paths
# against each other. rustup installs cargo in ~/.cargo/bin, which a non-login shell may not have
# on PATH.
if ! command -v cargo >/dev/null 2>&1 && [[ -x "$HOME/.cargo/bin/cargo" ]]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if command -v cargo >/dev/null 2>&1; then
  # maturin (from the lock) is in .venv/bin, which must be on PATH for its build hook
  PATH="$here/.venv/bin:$PATH" MATURIN_PEP517_ARGS="--locked" "${pip[@]}" install --quiet --no-deps --no-build-isolation ./native
elif [[ $dev -eq 1 ]]; then
  echo "setup: cargo (Rust) is needed to build the native core for the tests; install it with rustup" >&2
  exit 1
else
  echo "setup: cargo not found; the native core is not built (pure-Python parser, replay loop and numpy sort)" >&2
fi
if [[ $dev -eq 1 ]]; then
  scripts/install_test_deps.sh
fi
