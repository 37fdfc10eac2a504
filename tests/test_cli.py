"""The CLI through its real entry point: db upgrade/current, status, errors as one line."""

from __future__ import annotations

import json
from datetime import datetime
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.db_support import open_store
from wikivel_bot.queue import migrate
from wikivel_bot.types import Cursor

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, env_extra: dict = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIVEL_")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "wikivel_bot", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120)


def test_help_lists_the_commands() -> None:
    result = cli("--help")
    assert result.returncode == 0
    for verb in ("db", "status", "config"):
        assert verb in result.stdout


def test_unknown_command_is_a_usage_error() -> None:
    result = cli("frobnicate")
    assert result.returncode == 2
    assert "No such command" in result.stderr and "Traceback" not in result.stderr


def test_status_before_upgrade_says_what_to_do(tmp_path: Path) -> None:
    result = cli("--db-url", f"sqlite:///{tmp_path}/q.sqlite", "status")
    assert result.returncode == 3
    assert result.stderr.strip().splitlines() == [
        f"error: no queue database at {tmp_path}/q.sqlite (sqlite:///{tmp_path}/q.sqlite): run `wikivel-bot db "
        "upgrade` to create it, or point db.url / WIKIVEL_DB_URL / --db-url at the existing one"
    ]
    assert not (tmp_path / "q.sqlite").exists(), "status created an empty database"


def test_unreachable_database_is_one_line() -> None:
    result = cli("--db-url", "postgresql+psycopg://postgres@127.0.0.1:1/test", "status")
    assert result.returncode == 3
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: cannot connect to postgresql+psycopg://postgres@127.0.0.1:1/test")


def test_malformed_url_is_one_line() -> None:
    result = cli("--db-url", "not a url", "status")
    assert result.returncode == 3 and "not a database URL" in result.stderr


def test_upgrade_then_status_through_the_environment(db_url: str) -> None:
    """`WIKIVEL_DB_URL` selects the database; status shows counts and the poll cursor."""
    if db_url == "sqlite://":
        pytest.skip("a subprocess cannot see this process's in-memory database")
    env = {"WIKIVEL_DB_URL": db_url}
    result = cli("db", "upgrade", env_extra=env)
    assert result.returncode == 0, result.stderr
    assert migrate.head_revision() in result.stdout
    store = open_store(db_url)
    store.set_cursor("upload-log", Cursor(datetime(2026, 11, 20, 8, 30), 4242))
    store.close()
    result = cli("status", "--json", env_extra=env)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["files"]["discovered"] == 0
    assert doc["cursors"]["upload-log"] == {"timestamp": "2026-11-20T08:30:00", "log_id": 4242}
    text = cli("status", env_extra=env).stdout
    assert "upload-log: 2026-11-20T08:30:00Z log id 4242" in text
    current = cli("db", "current", env_extra=env)
    assert "up to date" in current.stdout
