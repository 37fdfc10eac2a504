"""A wiki this machine cannot reach ends in one line that says which host and what to do.

`make run` on a machine without a way to Commons used to end with urllib3's pool repr
("HTTPSConnectionPool(...) NameResolutionError") and no next step. The line must name the
host, why in a few words, the variable that points the bot at another wiki
(WIKIVEL_SITE_API_URL) and the README's offline recipe, and never a password from a URL.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest
import requests

from wikivel_bot.commons import site as site_module
from wikivel_bot.commons.site import open_site
from wikivel_bot.config import SiteSettings
from wikivel_bot.errors import WikiError, WikiUnreachable

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def closed_port() -> int:
    """A local port nothing listens on: bound, then closed."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_cli(cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env: Dict[str, str] = {k: v for k, v in os.environ.items() if not k.startswith("WIKIVEL_")}
    env.update({"PYTHONPATH": str(ROOT), "PYWIKIBOT_NO_USER_CONFIG": "2", "PYWIKIBOT_DIR": str(cwd),
                "WIKIVEL_LINKER_CACHE_DIR": str(cwd / "cache"), **extra})
    return subprocess.run([sys.executable, "-m", "wikivel_bot", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_offline_recipe_the_message_names_exists() -> None:
    assert site_module.OFFLINE_RECIPE == 'README.md, "Try it offline"'
    assert "\n## Try it offline" in README and "WIKIVEL_SITE_API_URL" in README


def test_run_against_a_closed_port_says_which_wiki_and_what_to_do(tmp_path: Path) -> None:
    db = ["--db-url", f"sqlite:///{tmp_path / 'queue.sqlite'}"]
    upgraded = run_cli(tmp_path, *db, "db", "upgrade")
    assert upgraded.returncode == 0, upgraded.stderr
    api = f"http://127.0.0.1:{closed_port()}/w/api.php"
    ran = run_cli(tmp_path, *db, "run", "--dry-run", "--weights", "random", WIKIVEL_SITE_API_URL=api)
    assert ran.returncode != 0
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), ran.stderr
    line = lines[0]
    assert f"cannot reach {api} (connection refused" in line
    assert "set WIKIVEL_SITE_API_URL to" in line and 'README.md, "Try it offline"' in line
    assert "ConnectionPool" not in line and "Traceback" not in ran.stderr


def test_a_password_in_the_url_never_reaches_the_message() -> None:
    port = closed_port()
    with pytest.raises(WikiUnreachable) as raised:
        open_site(SiteSettings(api_url=f"http://bot:hunter2secret@127.0.0.1:{port}/w/api.php?token=abc"))
    message = str(raised.value)
    assert "hunter2secret" not in message and "bot:" not in message and "token=abc" not in message
    assert f"cannot reach http://127.0.0.1:{port}/w/api.php (" in message
    assert isinstance(raised.value, WikiError)  # callers that handle wiki errors still do


def test_a_named_site_whose_host_does_not_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    """pywikibot raises a builtin ConnectionError around requests' error when a name does
    not resolve (its http layer, at once); ``.invalid`` never resolves (RFC 6761)."""

    def no_dns(*args: Any, **kwargs: Any) -> Any:
        try:
            requests.get("http://commons.wikivel-test.invalid/w/api.php", timeout=10)
        except requests.ConnectionError as exc:
            raise ConnectionError(exc) from None
        raise AssertionError(".invalid resolved")

    monkeypatch.setattr(site_module.pywikibot, "Site", no_dns)
    with pytest.raises(WikiUnreachable) as raised:
        open_site(SiteSettings(name="commons", operator_contact="User:Tester"))
    message = str(raised.value)
    assert message.startswith("commons: cannot reach commons.wikivel-test.invalid (its name does not resolve")
    assert "WIKIVEL_SITE_API_URL" in message and "Try it offline" in message
    assert "ConnectionPool" not in message and "NameResolutionError" not in message
