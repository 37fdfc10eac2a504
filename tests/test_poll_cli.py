"""`wikivel-bot poll` and `fetch` through the real CLI, in subprocesses, against the test
wiki started the way an operator would (``python -m tests.testwiki --port N``)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List

import pytest
from sqlalchemy import create_engine, text

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_UPLOADS = 46
REFUSED_BY_DEFAULT = 9  # see tests/test_poll.py


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def wiki_process() -> Iterator[str]:
    """The test wiki as a separate process; yields its API URL."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.testwiki", "--port", str(port)], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = server.stdout.readline().strip()  # printed once it listens
        assert line == f"http://127.0.0.1:{port}/w/api.php", server.stderr.read()
        yield line
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)


@pytest.fixture(scope="module")
def api_url() -> Iterator[str]:
    with wiki_process() as url:
        yield url


def environment(tmp_path: Path, **extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIKIVEL_", "PYWIKIBOT_"))}
    env.update(WIKIVEL_DB_URL=f"sqlite:///{tmp_path / 'queue.sqlite'}", PYWIKIBOT_NO_USER_CONFIG="2",
               PYTHONPATH=str(ROOT), **extra)
    return env


def wikivel(args: List[str], cwd: Path, env: Dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "wikivel_bot", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def states(tmp_path: Path) -> Dict[str, List[tuple]]:
    engine = create_engine(f"sqlite:///{tmp_path / 'queue.sqlite'}")
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT title, state, reason FROM files")).all()
    engine.dispose()
    out: Dict[str, List[tuple]] = {}
    for title, state, reason in rows:
        out.setdefault(state, []).append((title, reason))
    return out


def test_poll_once_queues_every_fixture_upload_and_again_nothing(api_url: str, tmp_path: Path) -> None:
    env = environment(tmp_path)
    work = tmp_path / "work"  # pywikibot writes its throttle file and caches in the cwd
    work.mkdir()
    wikivel(["db", "upgrade"], work, env)

    first = wikivel(["--api-url", api_url, "poll", "--once"], work, env)
    assert f"{FIXTURE_UPLOADS} log entries read" in first.stdout
    assert f"{FIXTURE_UPLOADS - REFUSED_BY_DEFAULT} files enqueued" in first.stdout
    assert f"{REFUSED_BY_DEFAULT} files ineligible" in first.stdout
    found = states(tmp_path)
    assert len(found["discovered"]) == FIXTURE_UPLOADS - REFUSED_BY_DEFAULT
    assert len(found["ineligible"]) == REFUSED_BY_DEFAULT
    assert all(reason for _title, reason in found["ineligible"])
    assert all(reason is None for _title, reason in found["discovered"])

    second = wikivel(["--api-url", api_url, "poll", "--once"], work, env)
    assert "0 files enqueued" in second.stdout and "0 files ineligible" in second.stdout
    assert states(tmp_path) == found
    assert (work / "throttle.ctrl").exists()  # pywikibot without user-config: the cwd


def test_fetch_with_an_operators_pywikibot_config(api_url: str, tmp_path: Path) -> None:
    # An operator's user-config.py with a family for this wiki and the bot's account name.
    config_dir = tmp_path / "pywikibot"
    config_dir.mkdir()
    (config_dir / "local_family.py").write_text(
        "from pywikibot import family\n\n"
        "class Family(family.SingleSiteFamily, family.DefaultWikibaseFamily):\n"
        f"    name = 'local'\n    domain = {api_url.split('/')[2]!r}\n\n"
        "    def protocol(self, code):\n        return 'http'\n\n"
        "    def scriptpath(self, code):\n        return '/w'\n", encoding="utf-8")
    (config_dir / "user-config.py").write_text(
        f"family_files['local'] = {str(config_dir / 'local_family.py')!r}\n"
        "family = 'local'\nmylang = 'local'\nusernames['local']['local'] = 'WikivelBot'\n"
        "max_retries = 2\nretry_wait = 0\n", encoding="utf-8")
    env = environment(tmp_path, PYWIKIBOT_DIR=str(config_dir))
    env.pop("PYWIKIBOT_NO_USER_CONFIG")
    wikivel(["db", "upgrade"], tmp_path, env)
    wikivel(["--api-url", api_url, "poll", "--once", "--since", "2024-05-01T10:50:00Z"], tmp_path, env)

    done = wikivel(["--api-url", api_url, "fetch", "--once"], tmp_path, env)
    assert "files claimed" in done.stdout
    found = {title: (state, reason) for state, rows in states(tmp_path).items() for title, reason in rows}
    assert found["File:Protected logo.png"][1].startswith("protected")
    assert found["File:Nobots example.jpg"][1].startswith("bots excluded")
    # The account from the operator's config is what {{bots|deny=WikivelBot}} names.
    assert found["File:Bots deny wikivel.jpg"][1].startswith("bots excluded")
    assert found["File:Lake in the mountains.jpg"] == ("fetched", None)
    assert (config_dir / "throttle.ctrl").exists()  # pywikibot used the operator's directory


def test_bad_since_is_one_line(api_url: str, tmp_path: Path) -> None:
    env = environment(tmp_path)
    wikivel(["db", "upgrade"], tmp_path, env)
    done = subprocess.run([sys.executable, "-m", "wikivel_bot", "--api-url", api_url, "poll", "--once",
                           "--since", "yesterday"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: --since 'yesterday' is not a timestamp")


def wait_for(check, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_poll_without_once_keeps_polling_until_ctrl_c(tmp_path: Path) -> None:
    import json
    import urllib.request

    env = environment(tmp_path, WIKIVEL_POLL_INTERVAL_S="1")
    wikivel(["db", "upgrade"], tmp_path, env)
    with wiki_process() as url:
        poller = subprocess.Popen([sys.executable, "-m", "wikivel_bot", "--api-url", url, "poll"], cwd=tmp_path,
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda: len(states(tmp_path).get("discovered", [])) == FIXTURE_UPLOADS - REFUSED_BY_DEFAULT)
            # A new upload while the poller sleeps is picked up by its next round.
            body = json.dumps({"name": "Uploaded while polling.jpg"}).encode()
            control = url.replace("/w/api.php", "/_control/uploads")
            urllib.request.urlopen(urllib.request.Request(control, data=body, method="POST"), timeout=10).read()
            wait_for(lambda: any(t == "File:Uploaded while polling.jpg"
                                 for t, _ in states(tmp_path).get("discovered", [])))
        finally:
            poller.send_signal(signal.SIGINT)
            out, err = poller.communicate(timeout=120)  # a hang guard, not a race
    assert poller.returncode == 0, err
    assert "interrupted" in err
    assert f"{FIXTURE_UPLOADS + 1} log entries read" in out
    assert f"{FIXTURE_UPLOADS - REFUSED_BY_DEFAULT + 1} files enqueued" in out
