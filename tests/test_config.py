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
        # A file saved as Latin-1: TOML is UTF-8, and tomllib's UnicodeDecodeError was a traceback.
        ("latin1", "cfg.toml: not UTF-8 text (byte 0xe9 at line 3)"),
    ],
)
def test_cli_reports_config_errors_in_one_line(tmp_path: Path, setup: str, needle: str) -> None:
    path = tmp_path / "cfg.toml"
    if setup == "latin1":
        path.write_bytes('# the queue\n[db]\nurl = "sqlite:///caf\u00e9.sqlite"\n'.encode("latin-1"))
    elif setup == "unknown":
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


# -- fail-safe settings: dry run is sticky, empty booleans are errors, numbers are in range, secrets hidden


def test_a_dry_run_in_the_file_cannot_be_cancelled_by_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, "[write]\ndry_run = true\n")
    for value in ("false", "0", "no", "off"):
        assert load_settings(path, env={"WIKIVEL_WRITE_DRY_RUN": value}).write.dry_run is True
    # ... while the environment may still ask for one the file did not.
    assert load_settings(env={"WIKIVEL_WRITE_DRY_RUN": "yes"}).write.dry_run is True


@pytest.mark.parametrize("value", ["", "  ", "ture", "2"])
def test_an_empty_or_unparsable_boolean_variable_is_an_error(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, "[write]\ndry_run = true\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={"WIKIVEL_WRITE_DRY_RUN": value})
    assert "WIKIVEL_WRITE_DRY_RUN must be true or false" in str(info.value)


def test_write_refuses_to_start_on_an_empty_dry_run_variable(tmp_path: Path) -> None:
    """The case seen in the wild: `WIKIVEL_WRITE_DRY_RUN=` beside `dry_run = true` made real
    edits. Now the command stops before it opens the database or the wiki."""
    (tmp_path / "wikivel.toml").write_text(
        f'[db]\nurl = "sqlite:///{tmp_path}/q.sqlite"\n[write]\ndry_run = true\n')
    for command in (["write"], ["run"]):
        result = _cli(*command, cwd=tmp_path, env_extra={"WIKIVEL_WRITE_DRY_RUN": ""})
        assert result.returncode == 2, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert "WIKIVEL_WRITE_DRY_RUN must be true or false" in line
    assert not (tmp_path / "q.sqlite").exists()


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[db]\nclaim_lease_s = 0\n", "db.claim_lease_s must be between 10 and 604800, not 0"),
        ("[db]\nclaim_lease_s = -5\n", "db.claim_lease_s must be between 10 and 604800, not -5"),
        ("[write]\nbatch_size = 0\n", "write.batch_size must be between 1 and 1000, not 0"),
        ("[fetch]\nbatch_size = 51\n", "fetch.batch_size must be between 1 and 50, not 51"),
        ("[poll]\nbatch_size = -1\n", "poll.batch_size must be between 1 and 5000"),
        ("[linker]\nbatch_size = 0\n", "linker.batch_size must be between 1 and 4096"),
        ("[linker]\ntop_k = 0\n", "linker.top_k must be between 1 and 1000, not 0"),
        ("[fetch]\nthumb_width = 333\n", "fetch.thumb_width must be one of Commons' thumbnail steps"),
        ("[fetch]\ntimeout_s = 0\n", "fetch.timeout_s must be more than 0"),
        ("[write]\nmax_attempts = 0\n", "write.max_attempts must be between 1 and 100"),
        ("[daemon]\nmetrics_port = 70000\n", "daemon.metrics_port must be between 0 and 65535"),
    ],
)
def test_numeric_settings_are_checked_at_load(tmp_path: Path, text: str, needle: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    assert needle in str(info.value) and str(path) in str(info.value)


def test_numeric_variables_are_checked_with_the_variable_named() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env={"WIKIVEL_DB_CLAIM_LEASE_S": "0"})
    assert str(info.value) == (
        "environment variable WIKIVEL_DB_CLAIM_LEASE_S: db.claim_lease_s must be between 10 and 604800, not 0")
    assert load_settings(env={"WIKIVEL_FETCH_THUMB_WIDTH": "960"}).fetch.thumb_width == 960


def test_a_password_in_the_database_url_is_never_printed(tmp_path: Path) -> None:
    url = "postgresql+psycopg://bot:s3cr%40t-pw@127.0.0.1:1/queue"
    shown = _cli("config", "show", cwd=tmp_path, env_extra={"WIKIVEL_DB_URL": url})
    assert shown.returncode == 0, shown.stderr
    assert "s3cr" not in shown.stdout and "postgresql+psycopg://bot:***@127.0.0.1:1/queue" in shown.stdout
    # A server that is not there: the error names the URL, without its password.
    failed = _cli("status", cwd=tmp_path, env_extra={"WIKIVEL_DB_URL": url})
    assert failed.returncode != 0 and "Traceback" not in failed.stderr
    assert "s3cr" not in failed.stderr + failed.stdout and "bot:***@" in failed.stderr


def test_secrets_are_masked_in_free_text_and_event_lines(caplog: pytest.LogCaptureFixture) -> None:
    from wikivel_bot.core.secrets import redact_secrets
    from wikivel_bot.events import event

    assert redact_secrets("mysql+pymysql://u:p@ss:w@host/db and x") == "mysql+pymysql://u:***@host/db and x"
    assert redact_secrets("connect failed: password=hunter2 host=x") == "connect failed: password=*** host=x"
    assert redact_secrets("sqlite:///db/wikivel.sqlite") == "sqlite:///db/wikivel.sqlite"
    assert redact_secrets("https://commons.wikimedia.org/wiki/File:A:B.jpg") == (
        "https://commons.wikimedia.org/wiki/File:A:B.jpg")
    with caplog.at_level("INFO", logger="wikivel_bot.events"):
        event("daemon", "error", error="cannot connect to postgresql://bot:hunter2@db/q")
    assert "hunter2" not in caplog.text and "bot:***@db/q" in caplog.text


def test_evidence_identifier_templates_are_added_to_the_shipped_table(tmp_path: Path) -> None:
    path = write(tmp_path, '[evidence]\ncache_days = 7\nidentifier_templates = ['
                           '{template = "Monumento BIC", parameter = "1", property = "P808"}]\n')
    settings = load_settings(path, env={})
    assert settings.evidence.cache_days == 7
    rules = {r.template: r.property for r in settings.evidence.identifier_rules}
    assert rules["Monumento BIC"] == "P808" and rules["Rijksmonument"] == "P359"
    again = load_settings(write(tmp_path, settings_as_toml(settings)), env={})
    assert again.evidence == settings.evidence
    from_env = load_settings(env={"WIKIVEL_EVIDENCE_IDENTIFIER_TEMPLATES": "Kulturdenkmal|id|P1234"})
    assert [(r.template, r.parameter, r.property) for r in from_env.evidence.identifier_templates] == [
        ("Kulturdenkmal", "id", "P1234")]


@pytest.mark.parametrize(
    "text, needle",
    [
        ('identifier_templates = [{template = "X", parameter = "1", property = "359"}]',
         "evidence.identifier_templates: row 1: '359' is not a Wikidata property id (like P359)"),
        ('identifier_templates = [{template = "", property = "P1"}]',
         "evidence.identifier_templates: row 1 needs a non-empty string template"),
        ('identifier_templates = ["Rijksmonument"]', "evidence.identifier_templates: row 1 must be a table"),
        ('identifier_templates = {template = "X"}', "evidence.identifier_templates must be a list of tables"),
        ("cache_days = -1", "evidence.cache_days must be between 0 and 3650, not -1"),
        ("enabled = 'yes'", "evidence.enabled must be true or false"),
    ],
)
def test_bad_evidence_settings_give_one_line_naming_the_key(tmp_path: Path, text: str, needle: str) -> None:
    path = write(tmp_path, "[evidence]\n" + text + "\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path, env={})
    message = str(info.value)
    assert needle in message and str(path) in message and "\n" not in message


def test_a_bad_identifier_row_in_the_environment_names_the_variable() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env={"WIKIVEL_EVIDENCE_IDENTIFIER_TEMPLATES": "Rijksmonument|P359"})
    assert str(info.value) == ("environment variable WIKIVEL_EVIDENCE_IDENTIFIER_TEMPLATES: 'Rijksmonument|P359' "
                               "must be template|parameter|property (like Rijksmonument|1|P359)")
