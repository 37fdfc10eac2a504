"""An optional Prometheus endpoint for the daemon (``daemon.metrics_port``; 0 = off).

Serves ``GET /metrics`` in the Prometheus text format on 127.0.0.1 (put a reverse proxy in
front to expose it): queue rows by state, the linking backlog, edits of the last hour, and
whether writing is paused. Values are read from the queue at scrape time, so several
daemons sharing a queue report the same numbers.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, List


def render_metrics(store: Any) -> str:
    """The metrics text for one scrape."""
    from wikivel_bot.queue import monitor

    counts = store.counts()
    activity = monitor.activity(store)
    states = monitor.get_states(store)
    lines: List[str] = []

    def family(name: str, kind: str, help_text: str) -> None:
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")

    family("wikivel_files", "gauge", "Queued files by state.")
    for state, n in counts["files"].items():
        lines.append(f'wikivel_files{{state="{state}"}} {n}')
    family("wikivel_candidates", "gauge", "Suggested (file, item) pairs by state.")
    for state, n in counts["candidates"].items():
        lines.append(f'wikivel_candidates{{state="{state}"}} {n}')
    family("wikivel_waiting_files", "gauge", "Files discovered or fetched but not linked yet.")
    lines.append(f"wikivel_waiting_files {activity['waiting']}")
    family("wikivel_edits_last_hour", "gauge", "Write attempts finished in the last hour, by outcome.")
    for outcome, n in sorted(activity["edits"].items()):
        lines.append(f'wikivel_edits_last_hour{{outcome="{outcome}"}} {n}')
    family("wikivel_writing_paused", "gauge", "1 while the stop page pauses writing.")
    lines.append(f"wikivel_writing_paused {int(bool(states.get('writing', {}).get('paused')))}")
    return "\n".join(lines) + "\n"


def serve_metrics(store: Any, port: int, host: str = "127.0.0.1",
                  render: Callable[[Any], str] = render_metrics) -> ThreadingHTTPServer:
    """Start serving in a daemon thread; ``shutdown()`` the returned server to stop."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics is served here")
                return
            try:
                body = render(store).encode()
            except Exception as exc:  # noqa: BLE001 - a scrape must get an answer
                self.send_error(503, f"queue unavailable: {type(exc).__name__}")
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:  # scrapes every few seconds: stay quiet
            return

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
