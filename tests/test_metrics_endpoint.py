"""The daemon's Prometheus endpoint serves the queue's numbers over real HTTP."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from tests.test_store import linked_file
from wikivel_bot.metrics_endpoint import serve_metrics
from wikivel_bot.queue import monitor
from wikivel_bot.queue.store import Store
from wikivel_bot.types import DecisionAction


def test_metrics_reflect_the_queue(store: Store) -> None:
    linked_file(store, 1, ["Q146", "Q144"])
    store.record_decision(1, "Q146", DecisionAction.REJECT, "Ann", "cli")
    monitor.set_state(store, "writing", {"paused": True, "reason": "stop page says stop"})
    server = serve_metrics(store, 0)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            text = response.read().decode()
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(url + "/other", timeout=10)
        assert info.value.code == 404
    finally:
        server.shutdown()
    assert 'wikivel_files{state="linked"} 1' in text
    assert 'wikivel_candidates{state="rejected"} 1' in text
    assert 'wikivel_candidates{state="proposed"} 1' in text
    assert "wikivel_writing_paused 1" in text
    assert "# TYPE wikivel_files gauge" in text
