"""Bad input ends in one line naming the problem and the input, never a traceback.

Each case runs the real command in a subprocess, as a user would, and asserts: a non-zero
exit code, exactly one line on stderr that starts with ``error:`` and names what was wrong,
and no ``Traceback``. The cases are the ones found by running the commands as an operator
would (each ended in a traceback or said something misleading before).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List, Sequence

import pytest

ROOT = Path(__file__).resolve().parents[1]
LONG_TITLE = "File:" + "A" * 300 + ".jpg"


def run_cli(args: Sequence[str], cwd: Path, env: Dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "PYWIKIBOT_NO_USER_CONFIG": "2",
                "PYWIKIBOT_DIR": str(cwd), "WIKIVEL_LINKER_CACHE_DIR": str(cwd / "cache"), **(env or {})}
    for key in ("WIKIVEL_CONFIG", "WIKIVEL_DB_URL"):
        full_env.pop(key, None)
    return subprocess.run([sys.executable, "-m", "wikivel_bot", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated queue holding the mallard (M10005) with two proposed items."""
    from tests.writer_support import queue_file
    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.engine import create_engine_for
    from wikivel_bot.queue.store import Store

    path = tmp_path_factory.mktemp("queue") / "queue.sqlite"
    engine = create_engine_for(f"sqlite:///{path}")
    migrate.upgrade(engine)
    store = Store(engine)
    queue_file(store, 10005, ["Q3736439", "Q146"])
    store.close()
    return path


def _db(path: Path) -> List[str]:
    return ["--db-url", f"sqlite:///{path}"]


def _approve(ref: str) -> Callable[[Path, Path], List[str]]:
    return lambda tmp, db: [*_db(db), "review", "approve", "--file", ref, "--item", "Q146", "--reviewer", "Ann"]


def _text_file(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def _photo(tmp: Path) -> Path:
    return ROOT / "tests" / "testwiki" / "fixtures" / "files" / "Red_apple.png"


# (id, args builder (tmp dir, seeded queue) -> argv, substrings the one line must contain)
CASES = [
    ("title-300-characters", _approve(LONG_TITLE), ["not a valid file title", "AAAA", "255"]),
    ("title-with-bar", _approve("File:Bad|title.jpg"), ["File:Bad|title.jpg", "cannot contain '|'"]),
    ("title-without-extension", _approve("File:Noextension"), ["File:Noextension", "extension"]),
    ("mid-overflow", _approve("M99999999999999999999999999"), ["M9999999", "too large"]),
    ("sqlite-read-only",
     lambda tmp, db: ["--db-url", f"sqlite:///file:{db}?mode=ro&uri=true", "review", "approve",
                      "--file", "M10005", "--item", "Q146", "--reviewer", "Ann"],
     ["read-only", "queue.sqlite"]),
    ("sqlite-under-proc", lambda tmp, db: ["--db-url", "sqlite:////proc/wikivel/q.sqlite", "db", "upgrade"],
     ["/proc/wikivel"]),
    ("sqlite-under-a-file",
     lambda tmp, db: ["--db-url", f"sqlite:///{_text_file(tmp, 'plain.txt', 'x')}/q.sqlite", "db", "upgrade"],
     ["plain.txt", "is a file, not a folder"]),
    ("db-upgrade-unknown-revision", lambda tmp, db: [*_db(db), "db", "upgrade", "9999"],
     ["'9999'", "known revisions", "0001"]),
    ("postgres-scheme", lambda tmp, db: ["--db-url", "postgres://wikivel:s3cret@localhost/q", "db", "upgrade"],
     ["postgres", "postgresql+psycopg://"]),
    ("weights-text-file",
     lambda tmp, db: ["suggest", str(_photo(tmp)), "--weights", str(_text_file(tmp, "weights.txt", "not weights\n"))],
     ["weights.txt", "not a weights file"]),
    ("labels-empty-dump",
     lambda tmp, db: ["labels", "build", "--wikidata-dump", str(_text_file(tmp, "wd.json", "")),
                      "--mediainfo-dump", str(_text_file(tmp, "mi.json", "[\n]\n")), "--out", str(tmp / "lbl")],
     ["wd.json", "is empty"]),
    ("labels-non-array-dump",
     lambda tmp, db: ["labels", "build", "--wikidata-dump", str(_text_file(tmp, "wd.json", "[\n]\n")),
                      "--mediainfo-dump", str(_text_file(tmp, "mi.json", '{"id": "M1"}\n')), "--out", str(tmp / "lbl")],
     ["mi.json", "not a Commons MediaInfo JSON dump", "'['"]),
    ("labels-out-not-writable",
     lambda tmp, db: ["labels", "build", "--wikidata-dump", str(_text_file(tmp, "wd.json", "[\n]\n")),
                      "--mediainfo-dump", str(_text_file(tmp, "mi.json", "[\n]\n")),
                      "--out", str(_text_file(tmp, "taken", "x")) + "/labels"],
     ["--out", "taken", "not a folder"]),
    ("export-out-not-writable", lambda tmp, db: [*_db(db), "export", "--out", "/proc/wikivel/x.csv"],
     ["/proc/wikivel/x.csv"]),
]


@pytest.mark.parametrize("name,build,expected", CASES, ids=[c[0] for c in CASES])
def test_one_line_never_a_traceback(name: str, build: Callable[[Path, Path], List[str]], expected: List[str],
                                    tmp_path: Path, seeded: Path) -> None:
    args = build(tmp_path, seeded)
    if name == "weights-text-file":
        pytest.importorskip("torch")
    result = run_cli(args, tmp_path)
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    for part in expected:
        assert part in lines[0], (part, lines[0])
    assert "s3cret" not in result.stderr + result.stdout


def test_status_elsewhere_creates_no_stray_database(tmp_path: Path) -> None:
    """`status` (like every command but `db`) needs an existing queue: run in a folder without
    one, it says how to create it and leaves the folder as it was."""
    result = run_cli(["status"], tmp_path)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert "no queue database at db/wikivel.sqlite" in lines[0] and "wikivel-bot db upgrade" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_db_upgrade_still_creates_the_database(tmp_path: Path) -> None:
    result = run_cli(["db", "upgrade"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "db" / "wikivel.sqlite").is_file()
    status = run_cli(["status"], tmp_path)
    assert status.returncode == 0, status.stderr
