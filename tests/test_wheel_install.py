"""Installed as Toolforge's buildpack installs it: a plain, non-editable ``pip install``.

The buildpack runs ``pip install -r requirements.txt``, which builds a wheel of this checkout
and installs it into site-packages. Only what setup.cfg declares travels: the modules of
``packages = find:`` and the files [options.package_data] names. An editable install (the
Makefile's) reads everything from the checkout and so hides a missing file; this test does
what the buildpack does instead, from a clean copy of the tracked files (a stale ``build/``
folder would ship old paths), and then uses the installed copy from another directory:

* every non-Python file under ``wikivel_bot/`` and every migration script is in the wheel;
* ``python -m wikivel_bot db upgrade`` brings an empty SQLite queue to the checkout's head
  revision (the Alembic scripts are found inside the installed package);
* ``python -m wikivel_bot web --port 0`` serves ``/review`` with its stylesheet and scripts
  (templates and static files come from the installed package).

No network: ``--no-build-isolation`` builds with the virtualenv's own setuptools (whose
``bdist_wheel`` is built in, so the separate ``wheel`` package is not needed) and
``--no-index`` keeps pip off every index.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import urllib.request
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from alembic.script import ScriptDirectory

from tests.browser_support import WebServer

ROOT = Path(__file__).resolve().parents[1]
MIGRATIONS = Path("wikivel_bot") / "queue" / "migrations"
# A generous limit against a hang, not a timing: each step ends on its own well before it.
HANG_GUARD_S = 300

pytestmark = pytest.mark.slow


def tracked_files(root: Path) -> List[str]:
    """What a clone would hold: tracked files and new ones git does not ignore (POSIX paths)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=root, check=True, capture_output=True).stdout.decode("utf-8")
    return sorted({name for name in listed.split("\0") if name})


def clean_copy(root: Path, target: Path) -> List[str]:
    """Copy the tracked files of ``root`` to ``target``; the names copied.

    A file deleted in the working tree but still in the index is left out, as a commit of
    the working tree would leave it out.
    """
    copied = []
    for name in tracked_files(root):
        source = root / name
        if not source.is_file():
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name)
        copied.append(name)
    return copied


def run(args: List[str], **kwargs: Any) -> subprocess.CompletedProcess:
    """``args`` to completion, output captured; fails the test with that output on an error."""
    result = subprocess.run(args, capture_output=True, text=True, timeout=HANG_GUARD_S, **kwargs)
    assert result.returncode == 0, f"{args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result


def installed_env(site: Path, **settings: str) -> Dict[str, str]:
    """The environment of a process that imports the installed copy, never the checkout.

    No WIKIVEL_* variable of the caller leaks in (every one is a setting), only ``settings``;
    PYTHONPATH is the install target alone, ahead of the virtualenv's editable finder.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIVEL_") and k != "PYTHONPATH"}
    env.update({"PYTHONPATH": str(site), "PIP_DISABLE_PIP_VERSION_CHECK": "1", **settings})
    return env


class Assets(HTMLParser):
    """The stylesheet and script URLs a page references."""

    def __init__(self) -> None:
        super().__init__()
        self.found: List[Tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "link" and values.get("rel") == "stylesheet" and values.get("href"):
            self.found.append(("stylesheet", values["href"] or ""))
        elif tag == "script" and values.get("src"):
            self.found.append(("script", values["src"] or ""))


def get(url: str) -> Tuple[int, bytes]:
    """Status and body of ``url`` (urllib raises on an error status, with the URL)."""
    with urllib.request.urlopen(url, timeout=HANG_GUARD_S) as response:
        return response.status, response.read()


def test_a_built_wheel_installed_elsewhere_migrates_the_queue_and_serves_the_review_page(tmp_path: Path) -> None:
    # 1. The wheel, built from a clean copy as the buildpack builds it.
    src, dist, site, elsewhere = (tmp_path / name for name in ("src", "dist", "site", "elsewhere"))
    copied = clean_copy(ROOT, src)
    assert not (src / "build").exists() and not list(src.glob("*.egg-info"))
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(dist), str(src)], env=installed_env(site))
    wheels = list(dist.glob("wikivel_bot-*.whl"))
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(wheels[0]) as wheel:
        in_wheel = set(wheel.namelist())

    # 2. Every non-Python file of the package, and every migration script, is in it.
    data = [name for name in copied if name.startswith("wikivel_bot/") and not name.endswith(".py")
            and "__pycache__" not in name.split("/")]
    assert f"{MIGRATIONS.as_posix()}/script.py.mako" in data
    assert any(n.startswith("wikivel_bot/web/static/") for n in data)
    migration_scripts = sorted(p.relative_to(src).as_posix() for p in (src / MIGRATIONS).rglob("*.py"))
    assert f"{MIGRATIONS.as_posix()}/env.py" in migration_scripts and len(migration_scripts) > 1
    missing = sorted(set(data + migration_scripts) - in_wheel)
    assert not missing, f"not in the wheel (add them to setup.cfg [options.package_data]): {missing}"

    # 3. Installed outside the checkout, without touching the project's virtualenv.
    run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(site), str(wheels[0])],
        env=installed_env(site))
    elsewhere.mkdir()
    db_file = elsewhere / "queue.sqlite"
    env = installed_env(site, WIKIVEL_DB_URL=f"sqlite:///{db_file}")
    imported = run([sys.executable, "-c", "import wikivel_bot, sys; print(wikivel_bot.__file__)"],
                   env=env, cwd=elsewhere).stdout.strip()
    assert Path(imported).resolve().is_relative_to(site.resolve()), imported

    # 4. The queue: an empty database upgraded to the checkout's newest revision.
    run([sys.executable, "-m", "wikivel_bot", "db", "upgrade"], env=env, cwd=elsewhere)
    head = ScriptDirectory(str(ROOT / MIGRATIONS)).get_current_head()
    with sqlite3.connect(db_file) as conn:
        revisions = [row[0] for row in conn.execute("SELECT version_num FROM alembic_version")]
    assert revisions == [head]

    # 5. The review page, its stylesheet and scripts, from the installed templates and static files.
    server = WebServer(env, elsewhere)
    try:
        status, body = get(server.url + "/review")
        assert status == 200
        parser = Assets()
        parser.feed(body.decode("utf-8"))
        kinds = {kind for kind, _ in parser.found}
        assert kinds == {"stylesheet", "script"}, parser.found
        for _, url in parser.found:
            status, content = get(urllib.request.urljoin(server.url + "/review", url))
            assert status == 200 and content, url
    finally:
        server.stop()
