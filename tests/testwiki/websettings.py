"""Settings that let ``wikivel-bot web`` log reviewers in through the test wiki's OAuth consumer.

``python -m tests.testwiki --web-config wikivel.toml`` writes, as ``--pywikibot-dir`` does for
pywikibot, what an operator would otherwise copy by hand from this folder's README:

* ``wikivel.toml`` — a wikivel settings file with ``[web]`` ``oauth_url`` (this wiki's
  ``/w/rest.php``), ``oauth_client_id`` and ``secrets_file`` (the absolute path of the next
  file). ``wikivel-bot`` reads ``wikivel.toml`` from its working directory by itself;
  another name is passed with ``--config`` or ``WIKIVEL_CONFIG``.
* ``wikivel.secrets.toml`` beside it, mode 600 — ``oauth_client_secret`` and a fresh
  ``session_secret``, the format ``web.secrets_file`` reads (``web/secrets_file.py``).

The settings file starts with :data:`MARKER`; a file without it (the operator's own settings)
is never overwritten. Nothing here prints a secret: the caller names the files only.
"""
from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from .oauth import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET

if TYPE_CHECKING:
    from .server import TestWiki

MARKER = '# Written by `python -m tests.testwiki --web-config`: the test wiki\'s OAuth consumer.'


class NotOurs(Exception):
    """The settings file exists and was not written here: it is left alone."""


def secrets_path(settings_file: Path) -> Path:
    """``wikivel.toml`` → ``wikivel.secrets.toml`` (same folder)."""
    return settings_file.with_name(settings_file.stem + '.secrets.toml')


def _toml(value: str) -> str:
    # A TOML basic string takes JSON's escapes; keep non-ASCII as is (TOML is UTF-8).
    return json.dumps(value, ensure_ascii=False)


def write_web_config(settings_file: str | Path, wiki: TestWiki, *,
                     client_id: str = DEFAULT_CLIENT_ID,
                     client_secret: str = DEFAULT_CLIENT_SECRET) -> tuple[Path, Path]:
    """Write the settings file and its secrets file; return both (absolute) paths.

    :raises NotOurs: *settings_file* exists and does not start with :data:`MARKER`.
    """
    target = Path(settings_file).resolve()
    if target.exists() and not target.read_text(encoding='utf-8').startswith(MARKER):
        raise NotOurs(f'{target} exists and was not written by the test wiki: '
                      'not overwriting it (pass another --web-config path)')
    target.parent.mkdir(parents=True, exist_ok=True)
    secret_file = secrets_path(target)
    # Created with mode 600 (and set again in case it existed), so no one else ever reads it.
    fd = os.open(secret_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w', encoding='utf-8') as out:
        out.write(f'oauth_client_secret = {_toml(client_secret)}\n'
                  f'session_secret = {_toml(secrets.token_hex(32))}\n')
    secret_file.chmod(0o600)
    target.write_text(
        f'{MARKER}\n'
        '# The web review (`wikivel-bot web`) logs reviewers in on the test wiki; the secrets\n'
        '# are in the file secrets_file names (mode 600), never in this one.\n'
        '[web]\n'
        f'oauth_url = {_toml(wiki.server + "/w/rest.php")}\n'
        f'oauth_client_id = {_toml(client_id)}\n'
        f'secrets_file = {_toml(str(secret_file))}\n', encoding='utf-8')
    return target, secret_file
