#!/usr/bin/env bash
# System packages the test suite needs beyond Python (Debian/Ubuntu; run as root or with sudo):
#   * a headless Chromium for the report's browser test (tests/integration/test_report_browser.py);
#   * a Prometheus server (/usr/bin/prometheus) for tests/integration/test_prometheus_scrape.py.
# Idempotent: packages already present are left alone; nothing is done when all are there.
# Python test dependencies (websocket-client, ...) come from `scripts/setup.sh --dev`.
set -euo pipefail

missing=()
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  echo "chromium already installed: $(command -v chromium || command -v chromium-browser)"
else
  missing+=(chromium fonts-dejavu-core)
fi
if [[ -x /usr/bin/prometheus ]]; then
  echo "prometheus already installed: /usr/bin/prometheus"
else
  missing+=(prometheus)
fi
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

sudo_cmd=""
if [[ "$(id -u)" != "0" ]]; then sudo_cmd="sudo"; fi
$sudo_cmd apt-get update
# --no-install-recommends keeps prometheus from pulling in node-exporter and friends; the package's
# own service is not needed (the test starts its own server on loopback with a temporary config)
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y --no-install-recommends "${missing[@]}"
