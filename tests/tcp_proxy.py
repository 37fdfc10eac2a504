"""A TCP proxy a test owns, to cut a database connection without stopping the server.

The PostgreSQL and MariaDB servers are shared (other test sessions use them), so an outage is
made here instead: every connection of the code under test goes through the proxy, and
:meth:`TcpProxy.cut` closes them all and turns new ones away (accepted, then closed at once:
what a client sees when the server goes down) until :meth:`TcpProxy.restore`.
"""

from __future__ import annotations

import selectors
import socket
import threading
from typing import List, Tuple


class TcpProxy:
    """Forwards 127.0.0.1:<port> to ``(host, port)``; a context manager."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pairs: List[Tuple[socket.socket, socket.socket]] = []
        self._down = False
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)

    def __enter__(self) -> "TcpProxy":
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._closed = True
        self._listener.close()
        self.cut()

    def cut(self) -> None:
        """Close every open connection and refuse new ones until :meth:`restore`."""
        with self._lock:
            self._down = True
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                _close(sock)

    def restore(self) -> None:
        with self._lock:
            self._down = False

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                down = self._down
            if down:
                _close(client)
                continue
            try:
                server = socket.create_connection(self._target)
            except OSError:
                _close(client)
                continue
            with self._lock:
                # a cut() while this connection was being opened: it must not outlive the cut
                down = self._down
                if not down:
                    self._pairs.append((client, server))
            if down:
                _close(client)
                _close(server)
                continue
            threading.Thread(target=self._pipe, args=(client, server), daemon=True).start()

    def _pipe(self, client: socket.socket, server: socket.socket) -> None:
        selector = selectors.DefaultSelector()
        try:
            selector.register(client, selectors.EVENT_READ, server)
            selector.register(server, selectors.EVENT_READ, client)
            while True:
                for key, _ in selector.select():
                    data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    if not data:
                        return
                    key.data.sendall(data)
        except (OSError, ValueError):
            return  # cut, or the other side closed
        finally:
            selector.close()
            _close(client)
            _close(server)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
