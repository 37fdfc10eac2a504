"""Settings: defaults, TOML, WIKIVEL_* variables, and clear errors through the real CLI."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from wikivel_bot.config import Settings, load_settings, settings_as_toml
from wikivel_bot.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "wikivel.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_are_frozen_and_typed() -> None:
    settings = load_settings(env={})
    assert settings.db.url.startswith("sqlite:///")
    assert settings.fetch.thumb_width == 330
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.db.url = "x"  # type: ignore[misc]


def test_file_then_environment(tmp_path: Path) -> None:
    path = write(tmp_path, '[db]\nurl = "sqlite:///a.sqlite"\n[poll]\nmin_width = 100\nskip_uploaders = ["Spammer"]\n')
    settings = load_settings(path, env={"WIKIVEL_DB_URL": "sqlite:///b.sqlite", "WIKIVEL_WRITE_DRY_RUN": "yes",
                                        "WIKIVEL_POLL_SKIP_CATEGORIES": "Logos, Maps"})
    assert settings.db.url == "sqlite:///b.sqlite"
    assert settings.poll.min_width == 100
    assert settings.poll.skip_uploaders == ("Spammer",)
    assert settings.poll.skip_categories == ("Logos", "Maps")
    assert settings.write.dry_run is True
    assert settings.source == str(path)


def test_example_file_loads_and_matches_defaults() -> None:
    settings = load_settings(ROOT / "wikivel.example.toml", env={})
    defaults = Settings()
    for section in ("db", "site", "poll", "fetch", "linker", "review", "write", "daemon"):
        assert getattr(settings, section) == getattr(defaults, section), section


def test_rendered_settings_load_back(tmp_path: Path) -> None:
    settings = load_settings(env={"WIKIVEL_SITE_LANGUAGES": "de,en", "WIKIVEL_LINKER_MIN_SCORE": "0.25"})
    again = load_settings(write(tmp_path, settings_as_toml(settings)), env={})
    assert again.site == settings.site and again.linker == settings.linker


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[db]\nurll = 'x'\n", "unknown key db.urll"),
        ("[dbs]\nurl = 'x'\n", "unknown section [dbs]"),
        ("[fetch]\nthumb_width = '330'\n", "fetch.thumb_width must be an integer"),
        ("[write]\ndry_run = 1\n", "write.dry_run must be true or false"),
        ("[poll]\nmime_types = 'image/png'\n", "poll.mime_types must be a list of strings"),
        ("[db\nurl = 1\n", "not valid TOML"),
    ],
)
def test_bad_files_name_the_key_and_the_file(tmp_path: Path, text: str, needle: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    assert needle in str(info.value)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    "env, needle",
    [
        ({"WIKIVEL_DB_URLL": "x"}, "unknown key db.urll"),
        ({"WIKIVEL_NOPE": "x"}, "WIKIVEL_NOPE"),
        ({"WIKIVEL_FETCH_TIMEOUT_S": "soon"}, "WIKIVEL_FETCH_TIMEOUT_S must be a number"),
        ({"WIKIVEL_WRITE_ENABLED": "maybe"}, "must be true or false"),
    ],
)
def test_bad_environment_names_the_variable(env: dict, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env=env)
    assert needle in str(info.value)


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="settings file not found"):
        load_settings(tmp_path / "nope.toml", env={})


def _cli(*args: str, cwd: Path, env_extra: dict = None) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIVEL_")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "wikivel_bot", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "setup, needle",
    [
        ("unknown", "unknown key db.colour"),
        ("wrongtype", "db.claim_lease_s must be an integer"),
        ("missing", "settings file not found"),
    ],
)
def test_cli_reports_config_errors_in_one_line(tmp_path: Path, setup: str, needle: str) -> None:
    path = tmp_path / "cfg.toml"
    if setup == "unknown":
        path.write_text("[db]\ncolour = 'blue'\n")
    elif setup == "wrongtype":
        path.write_text("[db]\nclaim_lease_s = 'long'\n")
    result = _cli("--config", str(path), "status", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0]


def test_cli_reads_wikivel_toml_from_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "wikivel.toml").write_text(f'[db]\nurl = "sqlite:///{tmp_path}/q.sqlite"\n')
    assert _cli("db", "upgrade", cwd=tmp_path).returncode == 0
    result = _cli("config", "show", cwd=tmp_path)
    assert f"{tmp_path}/q.sqlite" in result.stdout and "wikivel.toml" in result.stdout
