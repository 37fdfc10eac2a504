"""The user script in Chromium, on a file page the test wiki serves (with its documented
stand-in for the small part of MediaWiki's ``mw`` the script uses: tests/testwiki/userscripts.py).

``wikivel-bot web`` runs as an operator runs it, with the resident suggester on (the tiny
open_clip model, random weights). The file page loads ``/gadget.js`` through
``mw.loader.load``; the script shows the suggestions, marked as machine suggestions; the
reviewer logs in once in the tool's popup, and a decision by key and one by click reach the
queue under the reviewer's name, sent with the token, never the tool's cookie. A blocked
reviewer cannot decide, and a page of another origin cannot call the decision API even with
the token.
"""

from __future__ import annotations

import re
import threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, List

import pytest
import requests

from tests.browser_support import DESKTOP, WebServer, browser, new_context  # noqa: F401 - fixture
from tests.commons_support import CONTACT
from tests.linker_support import tiny_model_file, write_animals_artifact
from tests.review_support import decision_rows
from tests.test_web_browser import child_env
from tests.testwiki import TestWiki
from tests.testwiki.oauth import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from tests.web_support import BLOCKED, add_web_users
from wikivel_bot.queue import migrate
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store
from wikivel_bot.types import Candidate, MediaFile, Upload

pytestmark = pytest.mark.browser
pytest.importorskip("torch")

TITLE = "File:Red apple.png"
OTHER = "File:Dog in the park.jpg"
USER = "Alice Uploader"


class _Elsewhere(BaseHTTPRequestHandler):
    """A page of another origin (a site the reviewer happens to visit)."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"<!DOCTYPE html><html><body><p>another site</p></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def queue_as_linked(store: Store, server_url: str) -> tuple:
    """Ask the running service for the file, then queue its answer under the running
    linker's version, as the daemon would have: the script can then decide on it."""
    answer = requests.get(server_url + "/api/suggest", params={"file": TITLE}, timeout=120).json()
    assert answer["source"] == "linker", answer
    page_id = int(answer["mid"][1:])
    cands = answer["files"][0]["candidates"]
    assert len(cands) >= 3, cands
    store.enqueue([Upload(page_id=page_id, title=TITLE, timestamp=datetime(2024, 5, 2, 9, 0), uploader="Bob",
                          mime="image/png")])
    file_id = store.file_id_of(page_id)
    store.mark_fetched(file_id, MediaFile(page_id=page_id, title=TITLE, thumb_url="", revid=1))
    store.save_candidates(file_id, [
        Candidate(qid=c["qid"], score=c["score"], rank=c["rank"], linker="zero-shot",
                  linker_version=answer["linker"]["version"], labelset_hash=answer["label_set"]["hash"][:16],
                  evidence={"label": c["label"], "description": c["description"]})
        for c in cands])
    return page_id, [c["qid"] for c in cands]


def log_in_in_popup(page: Any, user: str) -> None:
    with page.expect_popup() as opened:
        page.click(".wikivel-login")
    popup = opened.value
    popup.wait_for_url(re.compile(r".*/w/rest\.php/oauth2/authorize.*"))
    popup.fill("#wpName", user)
    # Listening before the click: the popup may close before a later wait would begin.
    with popup.expect_event("close"):
        popup.click("#mw-oauth-allow")


def test_the_user_script_on_a_file_page(browser, tmp_path: Path) -> None:  # noqa: F811 - fixture
    from playwright.sync_api import expect

    elsewhere = ThreadingHTTPServer(("127.0.0.1", 0), _Elsewhere)
    threading.Thread(target=elsewhere.serve_forever, daemon=True).start()
    with TestWiki.start() as wiki:
        add_web_users(wiki)
        url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
        store = Store(create_engine_for(url))
        migrate.upgrade(store.engine)
        secrets = tmp_path / "web-secrets.toml"
        secrets.write_text(f'oauth_client_secret = "{DEFAULT_CLIENT_SECRET}"\nsession_secret = "{"x" * 48}"\n')
        labels = write_animals_artifact(tmp_path / "labels")
        server = WebServer(child_env(
            tmp_path, url, wiki, WIKIVEL_SITE_API_URL=wiki.api_url, WIKIVEL_SITE_OPERATOR_CONTACT=CONTACT,
            WIKIVEL_WEB_OAUTH_CLIENT_ID=DEFAULT_CLIENT_ID, WIKIVEL_WEB_SECRETS_FILE=str(secrets),
            WIKIVEL_WEB_SUGGEST="true", WIKIVEL_LINKER_MODEL=str(tiny_model_file()), WIKIVEL_LINKER_WEIGHTS="random",
            WIKIVEL_LINKER_DEVICE="cpu", WIKIVEL_LINKER_PRECISION="fp32", WIKIVEL_LINKER_LABELS_DIR=str(labels),
            WIKIVEL_LINKER_CACHE_DIR=str(tmp_path / "cache"), WIKIVEL_LINKER_TOP_K="3"), tmp_path)
        try:
            page_id, qids = queue_as_linked(store, server.url)
            wiki.user_scripts = [server.url + "/gadget.js"]
            wiki_page = wiki.api_url.split("/w/", 1)[0] + "/wiki/" + TITLE.replace(" ", "_")

            # 1. The file page shows the suggestions, marked as machine suggestions.
            context = new_context(browser, viewport=DESKTOP)
            page = context.new_page()
            sent: List[Any] = []
            page.on("request", lambda r: sent.append(r) if r.url.startswith(server.url + "/api/") else None)
            page.goto(wiki_page)
            rows = page.locator("#wikivel-suggestions .wikivel-cand")
            expect(rows).to_have_count(len(qids))
            expect(page.locator(".wikivel-machine")).to_have_text(re.compile("machine suggestions"))
            assert [rows.nth(i).get_attribute("data-item") for i in range(len(qids))] == qids
            expect(rows.nth(0).locator(".wikivel-why")).to_contain_text("why:")

            # 2. Log in once, in the tool's popup; the page gets its token by postMessage.
            log_in_in_popup(page, USER)
            expect(page.locator(".wikivel-me")).to_have_text(USER)

            # 3. A key on the first suggestion, a click on the second's reject button.
            rows.nth(0).locator(".wikivel-why").click()
            page.keyboard.press("a")
            expect(rows.nth(0)).to_have_attribute("data-state", "approved")
            rows.nth(1).locator("button[data-action=reject]").click()
            expect(rows.nth(1)).to_have_attribute("data-state", "rejected")
            assert decision_rows(store) == [(page_id, qids[0], "approve", USER, "web"),
                                            (page_id, qids[1], "reject", USER, "web")]
            decisions = [r for r in sent if r.url.endswith("/api/decisions") and r.method == "POST"]
            assert len(decisions) == 2
            for request in decisions:
                headers = request.all_headers()
                assert headers.get("authorization", "").startswith("Bearer ") and "cookie" not in headers

            # 3b. A file the bot has not queued: the first decision queues its suggestions, then
            # records the decision (the same rules and audit row).
            page.goto(wiki.api_url.split("/w/", 1)[0] + "/wiki/" + OTHER.replace(" ", "_"))
            fresh = page.locator("#wikivel-suggestions .wikivel-cand")
            expect(fresh.first).to_be_visible()
            expect(page.locator(".wikivel-note")).to_contain_text("not queued this file yet")
            expect(page.locator(".wikivel-me")).to_have_text(USER)  # the token is remembered
            item = fresh.first.get_attribute("data-item")
            fresh.first.locator(".wikivel-why").click()
            page.keyboard.press("p")
            expect(fresh.first).to_have_attribute("data-state", "approved")
            rows_now = decision_rows(store)
            assert len(rows_now) == 3 and rows_now[2][1:] == (item, "approve_prominent", USER, "web")
            page.goto(wiki_page)
            expect(rows.nth(0)).to_have_attribute("data-state", "approved")

            # 4. Another origin cannot call the decision API, even with the reviewer's token.
            token = page.evaluate("k => localStorage.getItem(k)", "wikivel-token:" + server.url)
            assert token
            other = context.new_page()
            other.goto(f"http://127.0.0.1:{elsewhere.server_address[1]}/")
            outcome = other.evaluate(
                """async ([tool, token, body]) => {
                     try {
                       const r = await fetch(tool + '/api/decisions', {method: 'POST', body: JSON.stringify(body),
                         headers: {'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'}});
                       return 'answered ' + r.status;
                     } catch (e) { return 'blocked'; }
                   }""", [server.url, token, {"file": f"M{page_id}", "item": qids[2], "action": "approve"}])
            assert outcome == "blocked"
            assert len(decision_rows(store)) == 3
            context.close()

            # 5. A blocked reviewer sees why, and cannot decide.
            blocked = new_context(browser, viewport=DESKTOP)
            page = blocked.new_page()
            page.goto(wiki_page)
            rows = page.locator("#wikivel-suggestions .wikivel-cand")
            expect(rows).to_have_count(len(qids))
            log_in_in_popup(page, BLOCKED)
            expect(page.locator(".wikivel-why-not")).to_contain_text("blocked")
            expect(rows.nth(2).locator("button[data-action=approve]")).to_be_disabled()
            rows.nth(2).locator(".wikivel-why").click()
            page.keyboard.press("a")
            expect(page.locator(".wikivel-status")).to_contain_text("blocked")
            expect(rows.nth(2)).to_have_attribute("data-state", "proposed")
            assert len(decision_rows(store)) == 3
            blocked.close()
        finally:
            server.stop()
            store.close()
            elsewhere.shutdown()
