#!/usr/bin/env bash
# System packages the test suite needs beyond Python: a headless Chromium for the report's
# browser test (tests/integration/test_report_browser.py). Debian/Ubuntu, run as root (or with sudo).
# Python test dependencies (websocket-client, ...) come from `scripts/setup.sh --dev`.
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  echo "chromium already installed: $(command -v chromium || command -v chromium-browser)"
  exit 0
fi
sudo_cmd=""
if [[ "$(id -u)" != "0" ]]; then sudo_cmd="sudo"; fi
$sudo_cmd apt-get update
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y --no-install-recommends chromium fonts-dejavu-core
