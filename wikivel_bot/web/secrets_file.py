"""The web app's secrets: the OAuth consumer secret and the session-signing key.

They live in their own TOML file (``web.secrets_file``) rather than in the settings, so
``config show`` and error messages never print them.
"""

from __future__ import annotations

import secrets
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from wikivel_bot.errors import ConfigError


@dataclass(frozen=True)
class WebSecrets:
    """The two secrets; ``repr`` hides them."""

    oauth_client_secret: str = field(default="", repr=False)
    session_secret: str = field(default="", repr=False)
    # True when session_secret was made up at start: sessions end when the process does.
    ephemeral: bool = False


def load_secrets(path: str) -> WebSecrets:
    """Read ``web.secrets_file``; an empty path gives no OAuth secret and a random session key.

    :raises ConfigError: unreadable file, not TOML, an unknown key or a non-string value
        (the message names the file and the key, never a value).
    """
    if not path:
        return WebSecrets(session_secret=secrets.token_hex(32), ephemeral=True)
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
    session = data.get("session_secret", "")
    if session and len(session) < 32:
        raise ConfigError(f"web.secrets_file {path}: session_secret must be at least 32 characters")
    return WebSecrets(oauth_client_secret=data.get("oauth_client_secret", ""),
                      session_secret=session or secrets.token_hex(32), ephemeral=not session)
