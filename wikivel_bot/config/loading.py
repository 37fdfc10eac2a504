"""Settings from their sources: defaults, a TOML file, ``WIKIVEL_*`` variables; checked at load.

Sources, later ones winning: the defaults (``sections.py``), a TOML file (``--config PATH``,
``$WIKIVEL_CONFIG``, or ``wikivel.toml`` in the working directory when present), then
``WIKIVEL_<SECTION>_<KEY>`` environment variables. An unknown key, a wrong type or a value out
of its range fails here, with the key's name and where it came from, before anything touches
the wiki or the database.

Settings know nothing of models: the checkpoint a models directory runs (``learning.models_dir``)
is asked for by whatever builds a linker (``learning.registry.with_running_model``), so a
broken registry stops only those, never ``status`` or ``config show``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
import typing
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from wikivel_bot.config.sections import Settings
from wikivel_bot.core.evidence import IdentifierRule, rules_from_table
from wikivel_bot.core.secrets import redact_secrets
from wikivel_bot.errors import ConfigError

DEFAULT_CONFIG_FILE = "wikivel.toml"
ENV_PREFIX = "WIKIVEL_"
CONFIG_PATH_VARIABLE = "WIKIVEL_CONFIG"
# The web's two secrets (web/secrets_file.py): read there, never settings, never shown.
OAUTH_SECRET_VARIABLE = "WIKIVEL_OAUTH_CLIENT_SECRET"
SESSION_SECRET_VARIABLE = "WIKIVEL_SESSION_SECRET"


def load_settings(path: Optional[Path] = None, env: Optional[Mapping[str, str]] = None) -> Settings:
    """Build Settings from defaults, a TOML file and ``WIKIVEL_*`` variables.

    :param path: the TOML file; None means ``$WIKIVEL_CONFIG``, else ``wikivel.toml`` when it
        exists. A path that was
        asked for explicitly and does not exist is an error.
    :param env: the environment to read (``os.environ`` when None).
    :raises ConfigError: unknown key, wrong type, unreadable file — naming key and source.
    """
    env = os.environ if env is None else env
    raw: Dict[str, Dict[str, Any]] = {}
    source = "defaults"
    if path is None and env.get(CONFIG_PATH_VARIABLE):
        path = Path(env[CONFIG_PATH_VARIABLE])
    if path is None and Path(DEFAULT_CONFIG_FILE).is_file():
        path = Path(DEFAULT_CONFIG_FILE)
    if path is not None:
        raw = _read_toml(Path(path))
        source = str(path)
    sections = _section_types()
    values: Dict[str, Dict[str, Any]] = {name: {} for name in sections}
    origins: Dict[Tuple[str, str], str] = {}
    for section, table in raw.items():
        if section not in sections:
            raise ConfigError(f"{source}: unknown section [{section}] (known: {', '.join(sections)})")
        if not isinstance(table, dict):
            raise ConfigError(f"{source}: [{section}] must be a table")
        for key, value in table.items():
            values[section][key] = _coerce(sections[section], section, key, value, source)
            origins[(section, key)] = source
    for name, text in env.items():
        # WIKIVEL_TEST_* belong to the test suite, WIKIVEL_CONFIG names the file itself.
        if not name.startswith(ENV_PREFIX) or name.startswith(ENV_PREFIX + "TEST_"):
            continue
        if name in (CONFIG_PATH_VARIABLE, OAUTH_SECRET_VARIABLE, SESSION_SECRET_VARIABLE):
            continue
        section, key = _split_env_name(name, sections)
        value = _coerce_env(sections[section], section, key, text, name)
        if (section, key) in STICKY_TRUE and values[section].get(key) is True:
            continue  # a later source can ask for a dry run, never cancel one
        values[section][key] = value
        origins[(section, key)] = f"environment variable {name}"
    built = {name: cls(**values[name]) for name, cls in sections.items()}
    settings = Settings(**built, source=source,
                        origins=tuple((f"{section}.{key}", where) for (section, key), where in origins.items()))
    _validate(settings, origins)
    return settings


# Switches that only ever turn on: once any source says true, a later one cannot say false
# (an empty or stray WIKIVEL_WRITE_DRY_RUN must never turn a configured dry run into edits).
STICKY_TRUE = frozenset({("write", "dry_run")})

# Commons' standard thumbnail widths: other widths are rendered on demand and throttled.
THUMB_STEPS = (20, 40, 60, 120, 250, 330, 500, 960, 1280, 1920, 3840)


def _at_least(low: float) -> Tuple[Callable[[Any], bool], str]:
    return (lambda v: v >= low), f"at least {low:g}"


def _between(low: float, high: float) -> Tuple[Callable[[Any], bool], str]:
    return (lambda v: low <= v <= high), f"between {low:g} and {high:g}"


# Every numeric setting and the range it must be in: checked at load, with the key's name
# and where the value came from, before anything touches the wiki or the database.
NUMERIC_RULES: Dict[str, Tuple[Callable[[Any], bool], str]] = {
    # Upper bounds are what the code behind a key can hold (a timedelta, a sleep, a LIMIT)
    # and far beyond any sensible value: 99999999999999999999 is one line, not a traceback.
    "db.claim_lease_s": _between(10, 7 * 86400),
    "poll.interval_s": _between(1, 86400),
    "poll.min_width": _between(0, 1_000_000),
    "poll.min_height": _between(0, 1_000_000),
    "poll.max_existing_depicts": _between(0, 10_000),
    "poll.batch_size": _between(1, 5000),
    "fetch.thumb_width": ((lambda v: v in THUMB_STEPS),
                          "one of Commons' thumbnail steps " + ", ".join(map(str, THUMB_STEPS))),
    "fetch.timeout_s": ((lambda v: 0 < v <= 3600), "more than 0 and at most 3600"),
    "fetch.retries": _between(0, 20),
    "fetch.max_connections": _between(1, 64),
    "fetch.max_bytes": _between(1, 10**11),
    "fetch.batch_size": _between(1, 50),
    "linker.threads": _between(0, 1024),
    "linker.top_k": _between(1, 1000),
    # linker.min_score has no range: trained heads score on their own scale (only finite).
    "linker.min_score": ((lambda v: True), "a finite number"),
    "linker.ancestor_margin": _between(0, 1e6),
    "linker.batch_size": _between(1, 4096),
    "write.batch_size": _between(1, 1000),
    "write.max_attempts": _between(1, 100),
    "daemon.link_interval_s": _between(1, 86400),
    "daemon.maintenance_interval_s": _between(1, 7 * 86400),
    "daemon.metrics_port": _between(0, 65535),
    "web.port": _between(0, 65535),
    "web.decisions_per_minute": _between(1, 100000),
    "web.page_size": _between(1, 500),
    "web.threads": _between(1, 256),
    "web.session_hours": _between(0.01, 720),
    "web.profile_check_minutes": _between(0, 1440),
    "web.suggest_per_minute": _between(1, 100000),
    "web.suggest_queue": _between(1, 10000),
    "web.suggest_window_ms": _between(0, 1000),
    "web.suggest_batch": _between(0, 1024),
    "web.suggest_cache_files": _between(0, 10_000_000),
    "web.suggest_max_age_s": _between(0, 86400),
    "backfill.max_connections": _between(1, 64),
    "backfill.max_mbps": _between(0, 1e6),
    "backfill.toolforge_connections": _between(1, 256),
    "backfill.batch_size": _between(1, 50),
    "backfill.actors": _between(0, 1024),
    "evidence.cache_days": _between(0, 3650),
    "learning.schedule_hours": _at_least(0),
    "learning.threshold": _between(0, 1),
    "learning.reviewer_cap": _between(0, 10**9),
    "learning.seed": _between(0, 2**32 - 1),  # numpy's seed range
    "learning.bootstrap": _between(100, 100000),
    "learning.epochs": _between(1, 10000),
    "learning.lr": ((lambda v: v > 0), "more than 0"),
    "cascade.candidates": _between(1, 10_000),
    # CLIP's text context is 77 tokens; fewer than 2 leave no room for any text.
    "cascade.text_tokens": _between(2, 77),
}


def _validate(settings: "Settings", origins: Mapping[Tuple[str, str], str]) -> None:
    """Check every numeric setting against :data:`NUMERIC_RULES`; unknown rules are ignored
    (a section added later validates its own keys the same way)."""
    for dotted, (ok, wanted) in NUMERIC_RULES.items():
        section, key = dotted.split(".", 1)
        value = getattr(getattr(settings, section), key)
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                or not ok(value)):
            where = origins.get((section, key), "defaults")
            raise ConfigError(f"{where}: {dotted} must be {wanted}, not {value!r}")


def _section_types() -> Dict[str, type]:
    hints = typing.get_type_hints(Settings)
    return {f.name: hints[f.name] for f in dataclasses.fields(Settings) if f.name not in ("source", "origins")}


def _read_toml(path: Path) -> Dict[str, Any]:
    """The file's TOML tables. TOML is UTF-8 by definition; tomllib reports other bytes as a
    bare UnicodeDecodeError (not a TOMLDecodeError), so they are decoded here to name the file
    and the line in one error instead of a traceback."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"settings file not found: {path}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read settings file: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(f"{path}: not UTF-8 text (byte {data[exc.start]:#04x} at line {line}): "
                          "TOML files must be UTF-8; convert it, e.g. iconv -f latin1 -t utf-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _split_env_name(name: str, sections: Mapping[str, type]) -> Tuple[str, str]:
    rest = name[len(ENV_PREFIX):].lower()
    section, _, key = rest.partition("_")
    if section not in sections or not key:
        raise ConfigError(
            f"environment variable {name}: unknown setting "
            f"(expected WIKIVEL_<SECTION>_<KEY> with SECTION one of {', '.join(sections)})"
        )
    return section, key


def _field_type(cls: type, section: str, key: str, source: str) -> Any:
    hints = typing.get_type_hints(cls)
    if key not in hints:
        known = ", ".join(f.name for f in dataclasses.fields(cls))
        raise ConfigError(f"{source}: unknown key {section}.{key} (known in [{section}]: {known})")
    return hints[key]


def _coerce(cls: type, section: str, key: str, value: Any, source: str) -> Any:
    """Check a TOML value against the field's type; ints are accepted where floats are."""
    kind = _field_type(cls, section, key, source)
    where = f"{source}: {section}.{key}"
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, not {value!r}")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be an integer, not {value!r}")
        return value
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where} must be a number, not {value!r}")
        try:
            return _finite(float(value), where)
        except OverflowError:  # an integer beyond any float (tomllib reads any length)
            raise ConfigError(f"{where} must be a finite number, not {value!r}") from None
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, not {value!r}")
        return value
    if _holds_rules(kind):
        if not isinstance(value, list):
            raise ConfigError(f"{where} must be a list of tables, not {value!r}")
        return rules_from_table(value, where)
    # Tuple[str, ...]: the only other container type settings use.
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where} must be a list of strings, not {value!r}")
    return tuple(value)


def _coerce_env(cls: type, section: str, key: str, text: str, name: str) -> Any:
    kind = _field_type(cls, section, key, f"environment variable {name}")
    where = f"environment variable {name}"
    if kind is bool:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        # Empty is an error, not "false": `WIKIVEL_WRITE_DRY_RUN=` must not mean real edits.
        raise ConfigError(f"{where} must be true or false (1/0, yes/no, on/off), not {text!r}")
    if kind is int:
        try:
            return int(text)
        except ValueError:
            raise ConfigError(f"{where} must be an integer, not {text!r}") from None
    if kind is float:
        try:
            number = float(text)
        except ValueError:
            raise ConfigError(f"{where} must be a number, not {text!r}") from None
        return _finite(number, f"{where}: {section}.{key}")
    if kind is str:
        return text
    parts = tuple(part.strip() for part in text.split(",") if part.strip())
    if _holds_rules(kind):
        # "Template|parameter|Pnnn" per row: "|" cannot occur in a template's name.
        rows = []
        for part in parts:
            fields = [f.strip() for f in part.split("|")]
            if len(fields) != 3:
                raise ConfigError(f"{where}: {part!r} must be template|parameter|property (like Rijksmonument|1|P359)")
            rows.append(dict(zip(("template", "parameter", "property"), fields)))
        return rules_from_table(rows, f"{where}: {section}.{key}")
    return parts


def _finite(number: float, where: str) -> float:
    """Refuse NaN and the infinities for every float setting, whether or not it has a rule in
    :data:`NUMERIC_RULES`: TOML spells them ``nan`` and ``inf`` and float() reads them from a
    variable, and a NaN passes every range check (it compares false to everything)."""
    if not math.isfinite(number):
        raise ConfigError(f"{where} must be a finite number, not {number!r}")
    return number


def _holds_rules(kind: Any) -> bool:
    """Whether a field's type is ``Tuple[IdentifierRule, ...]`` (``evidence.identifier_templates``)."""
    return typing.get_origin(kind) is tuple and typing.get_args(kind)[:1] == (IdentifierRule,)


def settings_as_toml(settings: Settings) -> str:
    """Render settings as TOML (for `wikivel-bot config show`); a password inside a URL (the
    database URL) is shown as ``***``. A key not at its default ends in a comment naming
    where it came from (``# from environment variable WIKIVEL_DB_URL``)."""
    origins = dict(settings.origins)
    lines = []
    for name in _section_types():
        lines.append(f"[{name}]")
        for key, value in dataclasses.asdict(getattr(settings, name)).items():
            where = origins.get(f"{name}.{key}")
            lines.append(f"{key} = {redact_secrets(_toml_value(value))}" + (f"  # from {where}" if where else ""))
        lines.append("")
    return "\n".join(lines)


def settings_sources(settings: Settings) -> str:
    """Where these settings came from, in one line: "defaults", or the defaults and each
    source that changed a key ("defaults, wikivel.toml, environment variable WIKIVEL_DB_URL")."""
    sources = ["defaults"]
    for _key, where in settings.origins:
        if where not in sources:
            sources.append(where)
    return ", ".join(sources)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):  # a row of evidence.identifier_templates: an inline table
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
