"""Serve the app with waitress, a production WSGI server (no Flask development server)."""

from __future__ import annotations

from typing import Callable, Optional

from flask import Flask


def make_server(app: Flask, host: str, port: int, threads: int) -> object:
    """A waitress server bound to (host, port); ``port=0`` picks a free port.

    :return: the server (``.run()`` serves, ``.close()`` stops, ``.effective_port``).
    """
    from waitress.server import create_server

    return create_server(app, host=host, port=port, threads=threads, ident="wikivel-bot-web",
                         clear_untrusted_proxy_headers=True)


def serve(app: Flask, host: str, port: int, threads: int, announce: Optional[Callable[[str], None]] = None) -> None:
    """Serve until interrupted; ``announce`` gets the URL once the socket is bound."""
    server = make_server(app, host, port, threads)
    bound = getattr(server, "effective_port", port)
    if announce is not None:
        announce(f"http://{host}:{bound}/")
    try:
        server.run()  # type: ignore[attr-defined]
    finally:
        server.close()  # type: ignore[attr-defined]
