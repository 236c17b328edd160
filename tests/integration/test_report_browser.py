"""The HTML report in a real headless Chromium, driven over the DevTools protocol.

Needs the Debian ``chromium`` package (scripts/install_test_deps.sh) and ``websocket-client``.
Checks that the page renders its figures (inline SVGs in the DOM with a non-zero size), that no
script error or console error occurs, that the page requests nothing from the network, and takes
a screenshot (kept beside the report in the test's temporary directory).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.unit.test_report_html import make_real_runs

from mimesisbench.report.build import build_report

pytestmark = pytest.mark.integration

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
STARTUP_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 60.0


def _chromium() -> str:
    for name in CHROMIUM_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("no Chromium on PATH: run scripts/install_test_deps.sh (apt-get install chromium)", pytrace=False)


class DevTools:
    """A minimal DevTools protocol client over one page's websocket."""

    def __init__(self, ws_url: str) -> None:
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=CALL_TIMEOUT_S, suppress_origin=True)
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        ident = next(self.ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while time.monotonic() < deadline:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)
        raise AssertionError(f"{method}: no answer within {CALL_TIMEOUT_S} s")

    def wait_event(self, method: str) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while time.monotonic() < deadline:
            message = json.loads(self.ws.recv())
            self.events.append(message)
            if message.get("method") == method:
                return message
        raise AssertionError(f"no {method} within {CALL_TIMEOUT_S} s")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"evaluation failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def close(self) -> None:
        self.ws.close()


@pytest.fixture()
def browser(tmp_path: Path) -> Iterator[str]:
    """A headless Chromium with remote debugging on a free port; yields the DevTools HTTP base URL."""
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    args = [
        _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
        "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--remote-debugging-port=0",
        "--remote-allow-origins=*", "--window-size=1200,900", "about:blank",
    ]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not port_file.is_file() or not port_file.read_text().strip():
            if proc.poll() is not None:
                pytest.fail(f"chromium exited with code {proc.returncode} at start", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail("chromium did not open its DevTools port in time", pytrace=False)
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        yield f"http://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def _page_ws(base: str) -> str:
    with urllib.request.urlopen(f"{base}/json/list", timeout=10) as response:
        targets = json.load(response)
    pages = [t for t in targets if t.get("type") == "page"]
    assert pages, targets
    return str(pages[0]["webSocketDebuggerUrl"])


def test_report_renders_in_chromium(browser: str, tmp_path: Path) -> None:
    runs = make_real_runs(tmp_path / "work", [("memory", 0.25), ("posix", 0.125)])
    result = build_report(runs, tmp_path / "report")
    tools = DevTools(_page_ws(browser))
    try:
        for domain in ("Page", "Runtime", "Log", "Network"):
            tools.call(f"{domain}.enable")
        tools.call("Emulation.setDeviceMetricsOverride", width=1200, height=900, deviceScaleFactor=1, mobile=False)
        tools.call("Page.navigate", url=result.html_path.resolve().as_uri())
        tools.wait_event("Page.loadEventFired")
        figures = tools.evaluate(
            """Array.from(document.querySelectorAll('figure[data-figure]')).map(f => {
                 const svg = f.querySelector('svg'); const r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
                 return {name: f.dataset.figure, width: r.width, height: r.height,
                         paths: svg ? svg.querySelectorAll('path, use').length : 0,
                         text: svg ? svg.textContent : ''}; })"""
        )
        height = tools.evaluate("document.documentElement.scrollHeight")
        title = tools.evaluate("document.title")
        tools.call("Emulation.setDeviceMetricsOverride", width=1200, height=min(int(height), 16000), deviceScaleFactor=1, mobile=False)
        shot = tools.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        screenshot = tmp_path / "report" / "screenshot.png"
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        time.sleep(0.2)
        tools.evaluate("1")  # drain events that arrived meanwhile
    finally:
        tools.close()
    assert "MimesisBench report" in title
    names = [f["name"] for f in figures]
    assert "runs-knee" in names and "run1-throughput" in names and "run2-latency-dist-ops" in names
    for fig in figures:
        assert fig["width"] > 300 and fig["height"] > 100, fig["name"]
        assert fig["paths"] > 10, fig["name"]  # axes, ticks and lines were drawn
    knee = next(f for f in figures if f["name"] == "runs-knee")
    assert "achieved throughput (ops/s)" in knee["text"]
    errors = [
        e for e in tools.events
        if e.get("method") == "Runtime.exceptionThrown"
        or (e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") in ("error", "assert"))
        or (e.get("method") == "Log.entryAdded" and e["params"]["entry"].get("level") == "error")
    ]
    assert errors == []
    requested = [e["params"]["request"]["url"] for e in tools.events if e.get("method") == "Network.requestWillBeSent"]
    assert all(url.startswith("file://") for url in requested), requested
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 50_000
