"""A real browser for the web tests: Playwright for Python driving Debian's Chromium.

Nothing is downloaded at run time (no ``playwright install``): the browser is
``/usr/bin/chromium`` from the distribution (``apt-get install chromium``; ``.ci/run`` does
it when missing). Without it the browser tests skip on a developer's machine and fail on
CI (``CI`` or ``WIKIVEL_TEST_REQUIRE_SERVERS`` set), where the script installs it.
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
ROOT = Path(__file__).resolve().parents[1]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
# Every wait in the browser tests is for a condition (a selector, a text, a URL); the time
# limit only guards against a hang. Playwright's defaults (30 s for waits, 5 s for
# ``expect``) are too short for a 2-core machine under a full test run's load.
HANG_GUARD_MS = 120_000


def _required() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("WIKIVEL_TEST_REQUIRE_SERVERS"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium (module-wide; each test opens its own context)."""
    if not Path(CHROMIUM).exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium)"
        if _required():
            pytest.fail(message)
        pytest.skip(message)
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if _required():
            pytest.fail("the playwright Python package is missing (pip install playwright)")
        pytest.skip("the playwright Python package is missing")
    with sync_playwright() as pw:
        from playwright.sync_api import expect

        expect.set_options(timeout=HANG_GUARD_MS)
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        chromium.close()


def new_context(browser: Any, **options: Any) -> Any:
    """``browser.new_context(**options)`` with the hang guard as every wait's time limit."""
    context = browser.new_context(**options)
    context.set_default_timeout(HANG_GUARD_MS)
    return context


class WebServer:
    """``wikivel-bot web --port 0`` in a subprocess, as an operator runs it."""

    def __init__(self, env: Dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "wikivel_bot", "web", "--port", "0"], env=env,
                                     cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: "queue.Queue[str]" = queue.Queue()
        self.log: list = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self._wait_for_url()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            self.lines.put(line)
        self.lines.put("")

    def _wait_for_url(self) -> str:
        while True:
            try:
                line = self.lines.get(timeout=120)
            except queue.Empty:
                raise AssertionError("wikivel-bot web did not start: " + "".join(self.log)) from None
            if not line:
                raise AssertionError("wikivel-bot web exited: " + "".join(self.log))
            found = re.search(r"serving the review page on (http://\S+)", line)
            if found:
                return found.group(1).rstrip("/")

    def stop(self) -> None:
        # The server's own log, into the test's captured stderr: pytest shows it only when the
        # test failed, which is when a page that never came needs the server's side of it.
        sys.stderr.write("wikivel-bot web log:\n" + "".join(self.log))
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
