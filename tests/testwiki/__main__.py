"""Standalone server: ``python -m tests.testwiki --port PORT [--fixtures DIR]``.

Prints the API URL (one line) on stdout, then serves until SIGTERM/SIGINT.
"""
from __future__ import annotations

import argparse
import signal
import sys
import threading
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
    args = parser.parse_args(argv)
    wiki = TestWiki(args.fixtures, port=args.port, thumb_delay=args.thumb_delay)

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
