"""The web app's secrets: the OAuth consumer secret and the session-signing key.

They live in their own TOML file (``web.secrets_file``) rather than in the settings, so
``config show`` and error messages never print them, or in two environment variables
(Toolforge's ``toolforge envvars``, which keep them out of the image and off the NFS), which
win over the file: ``WIKIVEL_OAUTH_CLIENT_SECRET`` and ``WIKIVEL_SESSION_SECRET``.
"""

from __future__ import annotations

import os
import secrets
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Optional

from wikivel_bot.config.loading import OAUTH_SECRET_VARIABLE, SESSION_SECRET_VARIABLE
from wikivel_bot.errors import ConfigError


@dataclass(frozen=True)
class WebSecrets:
    """The two secrets; ``repr`` hides them."""

    oauth_client_secret: str = field(default="", repr=False)
    session_secret: str = field(default="", repr=False)
    # True when session_secret was made up at start: sessions end when the process does.
    ephemeral: bool = False


def load_secrets(path: str, env: Optional[Mapping[str, str]] = None) -> WebSecrets:
    """Read ``web.secrets_file``, then the two variables (which win); with neither, no OAuth
    secret and a random session key.

    :param env: the environment (``os.environ`` when None).
    :raises ConfigError: unreadable file, not TOML, an unknown key or a non-string value
        (the message names the file and the key, never a value).
    """
    env = os.environ if env is None else env
    from_file = _read_file(path) if path else {}
    oauth = env.get(OAUTH_SECRET_VARIABLE) or from_file.get("oauth_client_secret", "")
    session = env.get(SESSION_SECRET_VARIABLE) or from_file.get("session_secret", "")
    if session and len(session) < 32:
        where = (f"environment variable {SESSION_SECRET_VARIABLE}:" if env.get(SESSION_SECRET_VARIABLE)
                 else f"web.secrets_file {path}: session_secret")
        raise ConfigError(f"{where} must be at least 32 characters")
    return WebSecrets(oauth_client_secret=oauth, session_secret=session or secrets.token_hex(32),
                      ephemeral=not session)


def _read_file(path: str) -> dict:
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"web.secrets_file {path}: cannot read it ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"web.secrets_file {path}: not valid TOML ({exc})") from None
    known = ("oauth_client_secret", "session_secret")
    for key, value in data.items():
        if key not in known:
            raise ConfigError(f"web.secrets_file {path}: unknown key {key} (known: {', '.join(known)})")
        if not isinstance(value, str):
            raise ConfigError(f"web.secrets_file {path}: {key} must be a string")
    return data
