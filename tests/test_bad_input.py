"""Bad input, the second round: numbers too large for the code behind them, a
database URL with a port that is not a number, damaged or non-UTF-8 title lists.

Each case runs the real command in a subprocess and asserts what an operator sees: a non-zero
exit, exactly one line on stderr that starts with ``error:`` and names the value and what is
accepted, no traceback, no password. Then every integer setting and every integer option is
walked: each must have a range whose top the code can hold, so a new one cannot slip in
unbounded.
"""

from __future__ import annotations

import bz2
import dataclasses
import gzip
import math
import typing
from pathlib import Path
from typing import Callable, Dict, List

import click
import pytest

from tests.test_cli_errors import run_cli
from wikivel_bot.config import Settings
from wikivel_bot.config.loading import NUMERIC_RULES

HUGE = "99999999999999999999"
PASSWORD = "s3cretpw"


def _queue(tmp: Path) -> str:
    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.engine import create_engine_for

    path = tmp / "queue.sqlite"
    engine = create_engine_for(f"sqlite:///{path}")
    migrate.upgrade(engine)
    engine.dispose()
    return f"sqlite:///{path}"


def _file(tmp: Path, name: str, data: bytes) -> str:
    path = tmp / name
    path.write_bytes(data)
    return str(path)


def _truncated(compress: Callable[[bytes], bytes]) -> bytes:
    whole = compress(b"".join(f"File:Example {i}.jpg\n".encode() for i in range(2000)))
    return whole[: len(whole) // 2]


LATIN1 = "File:Red apple.png\nFile:Café de Flore.jpg\nFile:Lighthouse at dusk.jpg\nFile:Crème brûlée.jpg\n"

# (id, args builder (tmp dir) -> (argv, extra env), substrings the one line must contain)
CASES: List[tuple] = [
    ("write-batch-size-huge",
     lambda tmp: (["--db-url", _queue(tmp), "write", "--batch-size", HUGE], {}),
     ["--batch-size", HUGE, "1<=x<=1000"]),
    ("db-url-port-not-a-number",
     lambda tmp: (["--db-url", f"postgresql://u:{PASSWORD}@h:notaport/db", "status"], {}),
     ["notaport", "port", "1 to 65535"]),
    ("db-url-port-out-of-range",
     lambda tmp: (["--db-url", f"postgresql+psycopg://u:{PASSWORD}@h:99999/db", "status"], {}),
     ["99999", "1 to 65535"]),
    ("claim-lease-huge-in-the-environment",
     lambda tmp: (["--db-url", _queue(tmp), "status"], {"WIKIVEL_DB_CLAIM_LEASE_S": HUGE}),
     ["WIKIVEL_DB_CLAIM_LEASE_S", "db.claim_lease_s", "between 10 and 604800", HUGE]),
    ("claim-lease-huge-in-the-file",
     lambda tmp: (["--config", _file(tmp, "big.toml", f"[db]\nclaim_lease_s = {HUGE}\n".encode()), "status"], {}),
     ["big.toml", "db.claim_lease_s", "between 10 and 604800", HUGE]),
    ("interval-huge",
     lambda tmp: (["status"], {"WIKIVEL_DAEMON_LINK_INTERVAL_S": HUGE}),
     ["daemon.link_interval_s", "between 1 and 86400"]),
    ("min-score-infinite",
     lambda tmp: (["status"], {"WIKIVEL_LINKER_MIN_SCORE": "inf"}),
     ["linker.min_score", "finite", "inf"]),
    ("titles-corrupt-gz",
     lambda tmp: (["backfill", "--titles", _file(tmp, "titles.txt.gz", _truncated(gzip.compress))], {}),
     ["titles.txt.gz", "not a readable gzip file", "intact .gz"]),
    ("titles-not-gzip-at-all",
     lambda tmp: (["backfill", "--titles", _file(tmp, "titles.gz", b"File:A.jpg\n")], {}),
     ["titles.gz", "not a readable gzip file"]),
    ("titles-corrupt-bz2",
     lambda tmp: (["backfill", "--titles", _file(tmp, "titles.txt.bz2", _truncated(bz2.compress))], {}),
     ["titles.txt.bz2", "not a readable bzip2 file"]),
    ("titles-latin1",
     lambda tmp: (["backfill", "--titles", _file(tmp, "titles.txt", LATIN1.encode("latin-1"))], {}),
     ["titles.txt", "not UTF-8 at lines 2, 4", "iconv -f latin1 -t utf-8"]),
    ("titles-latin1-in-a-gz",
     lambda tmp: (["backfill", "--titles", _file(tmp, "t.gz", gzip.compress(LATIN1.encode("latin-1")))], {}),
     ["t.gz", "not UTF-8 at lines 2, 4"]),
]


@pytest.mark.parametrize("name,build,expected", CASES, ids=[c[0] for c in CASES])
def test_one_error_line_naming_the_value_and_what_is_accepted(
        name: str, build: Callable[[Path], tuple], expected: List[str], tmp_path: Path) -> None:
    if name.startswith("titles-"):
        pytest.importorskip("ray")  # the check runs in the backfill, which needs Ray installed
    args, env = build(tmp_path)
    result = run_cli(args, tmp_path, env)
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    for part in expected:
        assert part in lines[0], (part, lines[0])
    assert PASSWORD not in result.stderr + result.stdout


def test_a_utf8_title_list_passes_the_check_and_bad_lines_are_counted(tmp_path: Path) -> None:
    """The check reads the list in chunks: a character split across two chunks is fine, and
    past five bad lines the rest are counted, not listed."""
    from wikivel_bot.backfill import sources
    from wikivel_bot.errors import UsageError

    good = _file(tmp_path, "good.txt", ("File:Crème brûlée.jpg\n" * 50).encode())
    sources.check_title_file(good)
    sources.check_title_file(_file(tmp_path, "good.bz2", bz2.compress(Path(good).read_bytes())))
    bad = _file(tmp_path, "bad.txt", ("File:Crème.jpg\n" * 10).encode("latin-1"))
    original = sources.CHECK_CHUNK
    try:
        for chunk in (1, 3, 7, original):  # chunk edges inside characters and lines
            sources.CHECK_CHUNK = chunk
            sources.check_title_file(good)
            with pytest.raises(UsageError, match=r"not UTF-8 at lines 1, 2, 3, 4, 5 and 5 more "):
                sources.check_title_file(bad)
    finally:
        sources.CHECK_CHUNK = original


def _int_settings() -> Dict[str, int]:
    """Every integer setting as ``section.key`` with its default."""
    found = {}
    settings = Settings()
    for section in dataclasses.fields(Settings):
        value = getattr(settings, section.name)
        if not dataclasses.is_dataclass(value):
            continue
        hints = typing.get_type_hints(type(value))
        for key in dataclasses.fields(value):
            if hints[key.name] is int:
                found[f"{section.name}.{key.name}"] = getattr(value, key.name)
    return found


def test_every_integer_setting_has_a_range_the_code_can_hold() -> None:
    ints = _int_settings()
    assert len(ints) > 20  # the walk found the settings
    unbounded = [key for key in ints if key not in NUMERIC_RULES]
    assert unbounded == [], f"integer settings without a range in NUMERIC_RULES: {unbounded}"
    for key, default in ints.items():
        ok, wanted = NUMERIC_RULES[key]
        assert ok(default), (key, default, wanted)
        # Beyond a 64-bit integer (a SQL column, a timedelta, a sleep) is never in range.
        assert not ok(2**63) and not ok(int(HUGE)), (key, wanted)


def _float_settings() -> List[str]:
    """Every float setting as ``section.key``, found by walking the Settings sections."""
    found = []
    settings = Settings()
    for section in dataclasses.fields(Settings):
        value = getattr(settings, section.name)
        if not dataclasses.is_dataclass(value):
            continue
        hints = typing.get_type_hints(type(value))
        found += [f"{section.name}.{key.name}" for key in dataclasses.fields(value) if hints[key.name] is float]
    return found


NOT_FINITE = ("nan", "inf", "-inf")


def test_every_float_setting_refuses_nan_and_infinities_from_the_file_and_the_environment(
        tmp_path: Path) -> None:
    """NaN passes every range check (it compares false to everything) and TOML spells nan and
    inf itself: each float setting must refuse all three from both sources, in one line
    naming the key and where the value came from."""
    from wikivel_bot.config import load_settings
    from wikivel_bot.errors import ConfigError

    floats = _float_settings()
    assert len(floats) >= 9 and "linker.min_score" in floats and "fetch.timeout_s" in floats
    tried = 0
    for key in floats:
        section, name = key.split(".")
        for spelling in NOT_FINITE:
            path = tmp_path / "settings.toml"
            path.write_text(f"[{section}]\n{name} = {spelling}\n", encoding="utf-8")
            with pytest.raises(ConfigError) as in_file:
                load_settings(path, env={})
            variable = f"WIKIVEL_{section.upper()}_{name.upper()}"
            with pytest.raises(ConfigError) as in_env:
                load_settings(env={variable: spelling})
            for error, where in ((in_file, str(path)), (in_env, f"environment variable {variable}")):
                message = str(error.value)
                assert "\n" not in message and message.startswith(where), (key, spelling, message)
                assert f"{key} must be a finite number, not {float(spelling)!r}" in message, message
            tried += 1
    assert tried == 3 * len(floats)
    # TOML integers have no length limit in tomllib: one beyond any float is no traceback either.
    path = tmp_path / "settings.toml"
    path.write_text("[web]\nsession_hours = 1" + "0" * 400 + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="web.session_hours must be a finite number"):
        load_settings(path, env={})
    assert not math.isinf(load_settings(env={}).linker.min_score)


def _options(kind: type) -> List[tuple]:
    """Every option of every command whose click type is a ``kind``: (argv words to reach the
    command, the option)."""
    from wikivel_bot.cli import main

    found = []

    def walk(command: click.Command, path: List[str]) -> None:
        if isinstance(command, click.Group):
            for name, sub in command.commands.items():
                walk(sub, path + [name])
        for param in command.params:
            if isinstance(param.type, kind):
                found.append((path, param))

    walk(main, [])
    return found


def _int_options() -> List[tuple]:
    # IntRange is an IntParamType, as FloatRange is a FloatParamType.
    return [(" ".join(["wikivel-bot", *path]), param) for path, param in _options(click.types.IntParamType)]


def test_every_integer_option_has_a_range_with_a_top() -> None:
    options = _int_options()
    assert len(options) > 30  # the walk found the options
    unbounded = []
    for where, param in options:
        if getattr(param, "count", False):
            continue  # -v -v -v: counted by click, never typed as a number
        kind = param.type
        if not isinstance(kind, click.IntRange) or kind.min is None or kind.max is None or kind.max >= 2**63:
            unbounded.append(f"{where} --{param.name}")
    assert unbounded == [], f"integer options without an upper bound: {unbounded}"


def _float_options() -> List[tuple]:
    """Every float option of every command (FLOAT and every FloatRange): (argv, the option)."""
    return _options(click.types.FloatParamType)


def test_every_float_option_refuses_nan_and_infinities(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--min-score nan`` once matched nothing, silently. Every float option of every command
    is given nan, inf and -inf: each is refused in one ``error:`` line naming the option, with
    a non-zero exit, before the command does anything."""
    from click.testing import CliRunner

    from wikivel_bot.cli import main
    from wikivel_bot.cli.ranges import FiniteFloat, FiniteFloatRange

    monkeypatch.chdir(tmp_path)  # no wikivel.toml of the checkout's
    for variable in ("WIKIVEL_CONFIG", "WIKIVEL_DB_URL"):
        monkeypatch.delenv(variable, raising=False)
    options = _float_options()
    names = {(" ".join(path), param.name) for path, param in options}
    assert len(options) >= 18 and {("review", "min_score"), ("export", "min_score"), ("train", "lr")} <= names
    plain = [f"{' '.join(path)} --{param.name}" for path, param in options
             if not isinstance(param.type, (FiniteFloat, FiniteFloatRange))]
    assert plain == [], f"float options not using ranges.FINITE_FLOAT or ranges.finite_range: {plain}"
    for path, param in options:
        assert isinstance(param, click.Option), (path, param.name)
        flag = max(param.opts, key=len)
        for spelling in NOT_FINITE:
            result = CliRunner().invoke(main, [*path, flag, spelling])
            where = f"{' '.join(path)} {flag} {spelling}"
            assert result.exit_code != 0 and isinstance(result.exception, SystemExit), (where, result.output)
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1, (where, result.stderr)
            assert lines[0].startswith("error: ") and f"'{flag}'" in lines[0] and "not a finite number" in lines[0], \
                (where, lines[0])
    # Finite values still pass: every default, given as text like a user would.
    for path, param in options:
        if isinstance(param.default, (int, float)):  # click marks an option without one UNSET
            assert param.type.convert(str(param.default), param, None) == param.default, (path, param.name)


@pytest.mark.parametrize("argv", [
    ["dataset", "from-decisions", "--split", "{spelling},0.2,0.2", "--out", "{tmp}/out"],
    ["dataset", "from-decisions", "--split", "0.6,0.2,{spelling}", "--out", "{tmp}/out"],
])
def test_split_shares_refuse_nan_and_infinities(argv: List[str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``--split`` is text parsed into floats, not a click float: it refuses them itself, in
    one line naming the option, before the queue is even opened."""
    from click.testing import CliRunner

    from wikivel_bot.cli import main

    monkeypatch.chdir(tmp_path)
    for spelling in NOT_FINITE:
        args = [a.format(spelling=spelling, tmp=tmp_path) for a in argv]
        result = CliRunner().invoke(main, ["--db-url", f"sqlite:///{tmp_path}/none.sqlite", *args])
        assert result.exit_code == 2, (args, result.output)
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("error: --split takes three") and spelling in line, line
    assert not (tmp_path / "out").exists() and not (tmp_path / "none.sqlite").exists()


def test_dataset_build_split_refuses_nan_and_infinities(tmp_path: Path) -> None:
    """``dataset build --split`` is parsed by the command itself, before any dump is read."""
    from wikivel_bot.cli.train import _fractions
    from wikivel_bot.errors import UsageError

    assert _fractions("0.8,0.1,0.1") == (0.8, 0.1, 0.1)
    for text in ("nan,0.1,0.1", "0.8,inf,0.1", "0.8,0.1,-inf", "0.8,0.1"):
        with pytest.raises(UsageError, match="--split takes three finite shares"):
            _fractions(text)
