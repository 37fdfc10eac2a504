"""Standalone server: ``python -m tests.testwiki --port PORT [--fixtures DIR] [--pywikibot-dir DIR]
[--web-config FILE]``.

Prints the API URL (one line) on stdout, then serves until SIGTERM/SIGINT. With
``--pywikibot-dir DIR`` it first writes a working pywikibot configuration for the wiki's bot
account into DIR (``user-config.py``, ``user-password.py`` with the bot password, and the
family files, registered as ``commons`` and ``wikidata``): run wikivel-bot with
``PYWIKIBOT_DIR=DIR`` and it logs in as WikivelBot there, with nothing to copy by hand.
With ``--web-config FILE`` (e.g. ``wikivel.toml``) it writes the web review's settings for its
OAuth consumer into FILE and the consumer's secret into ``FILE-stem.secrets.toml`` (mode 600),
so ``wikivel-bot web`` logs reviewers in on this wiki. Secrets are never printed.

Unlike ``TestWiki.start()``, the standalone wiki also knows every item of the shipped starter
label set (see :mod:`.starter_items`): whatever the offline recipe's linker suggests can be
approved and written (``--no-starter-items`` serves the fixtures alone).
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

from .server import TestWiki


def main(argv: list[str] | None = None) -> int:
    """Run the test wiki in the foreground."""
    parser = argparse.ArgumentParser(prog='python -m tests.testwiki',
                                     description=__doc__)
    parser.add_argument('--port', type=int, default=0,
                        help='TCP port on 127.0.0.1 (0 = any free port)')
    parser.add_argument('--fixtures', default=None,
                        help='fixture directory (default: the bundled one)')
    parser.add_argument('--thumb-delay', type=float, default=0.0,
                        help='seconds each media request is held open')
    parser.add_argument('--strict-baserevid', action='store_true',
                        help='answer editconflict to every write with a stale baserevid '
                             "(default: patch non-conflicting changes, as Wikibase does)")
    parser.add_argument('--pywikibot-dir', default=None, metavar='DIR',
                        help='write user-config.py, user-password.py and family files '
                             "for this wiki's bot account into DIR (use PYWIKIBOT_DIR=DIR)")
    parser.add_argument('--no-starter-items', action='store_true',
                        help="serve the fixtures' items only, not also the starter label set's")
    parser.add_argument('--web-config', default=None, metavar='FILE',
                        help="write wikivel settings for this wiki's OAuth consumer into FILE "
                             '(wikivel.toml is read from the working directory) and its '
                             'secret into FILE-stem.secrets.toml')
    args = parser.parse_args(argv)
    wiki = TestWiki(args.fixtures, port=args.port, thumb_delay=args.thumb_delay,
                    strict_baserevid=args.strict_baserevid)
    if not args.no_starter_items:
        from .starter_items import add_starter_items

        add_starter_items(wiki)
    if args.web_config:
        from .websettings import NotOurs, write_web_config

        try:
            settings_file, secret_file = write_web_config(args.web_config, wiki)
        except (NotOurs, OSError) as exc:
            wiki._httpd.server_close()  # never served: stop() would wait for serve_forever
            print(f'error: {exc}', file=sys.stderr, flush=True)
            return 2
        print(f'web review settings for the OAuth consumer written to {settings_file} '
              f'(its secret to {secret_file}, mode 600)', file=sys.stderr, flush=True)
    if args.pywikibot_dir:
        from .pwb import write_config

        directory = write_config(Path(args.pywikibot_dir).resolve(), wiki)
        print(f'pywikibot configuration for {wiki.bot_username} written to {directory} '
              f'(set PYWIKIBOT_DIR={directory})', file=sys.stderr, flush=True)

    def stop(signum: int, frame: FrameType | None) -> None:
        # shutdown() blocks until serve_forever returns, so call it elsewhere
        threading.Thread(target=wiki.stop, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(wiki.api_url, flush=True)
    wiki.serve_forever()
    return 0


if __name__ == '__main__':
    sys.exit(main())
