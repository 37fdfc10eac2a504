"""Standalone server: ``python -m tests.testwiki --port PORT [--fixtures DIR] [--pywikibot-dir DIR]``.

Prints the API URL (one line) on stdout, then serves until SIGTERM/SIGINT. With
``--pywikibot-dir DIR`` it first writes a working pywikibot configuration for the wiki's bot
account into DIR (``user-config.py``, ``user-password.py`` with the bot password, and the
family files, registered as ``commons`` and ``wikidata``): run wikivel-bot with
``PYWIKIBOT_DIR=DIR`` and it logs in as WikivelBot there, with nothing to copy by hand.
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
    parser.add_argument('--pywikibot-dir', default=None, metavar='DIR',
                        help='write user-config.py, user-password.py and family files '
                             "for this wiki's bot account into DIR (use PYWIKIBOT_DIR=DIR)")
    args = parser.parse_args(argv)
    wiki = TestWiki(args.fixtures, port=args.port, thumb_delay=args.thumb_delay)
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
