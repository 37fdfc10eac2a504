"""The user script's side of the tool: ``/gadget.js``, the token login for the wiki's pages,
and the header path's own CSRF and origin rule — through the real app, the test wiki's OAuth
and a real SQLite queue (docs/reviewer.md, "On the file page").

A decision with a token goes through the same function as the review page: the state seen,
409 on a race, blocks, the audit row with the reviewer's name.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.db_support import queue_url
from tests.review_support import decision_rows, pair_states
from tests.web_support import BLOCKED, csrf_of, login, make_app, seed, webwiki  # noqa: F401 - fixture
from wikivel_bot.queue import migrate
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store

ALICE = "Alice Uploader"
ELSEWHERE = "https://evil.example"


@pytest.fixture
def store(tmp_path: Path, _scratch_databases: Any) -> Iterator[Store]:
    engine = create_engine_for(queue_url("sqlite-file", tmp_path, _scratch_databases))
    migrate.upgrade(engine)
    queue = Store(engine)
    seed(queue)
    yield queue
    queue.close()


def wiki_origin(wiki: Any) -> str:
    return wiki.api_url.split("/w/", 1)[0]


def token_for(client: Any, wiki: Any, user: str) -> str:
    """Log in as ``user`` (the popup's journey: /gadget/login → the wiki's OAuth → back) and
    read the token the popup page hands to the file page."""
    origin = wiki_origin(wiki)
    first = client.get("/gadget/login", query_string={"origin": origin})
    assert first.status_code == 302 and "/login?next=" in first.headers["Location"]
    assert login(client, user, next_path=first.headers["Location"].split("next=", 1)[1]).status_code == 302
    page = client.get("/gadget/login", query_string={"origin": origin})
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    text = page.get_data(as_text=True)
    assert f'data-origin="{origin}"' in text
    return re.search(r'data-token="([^"]+)"', text).group(1)


def bearer(token: str, origin: str) -> dict:
    return {"Authorization": f"Bearer {token}", "Origin": origin}


def test_the_script_is_served_from_the_repository(webwiki, store):  # noqa: F811
    client = make_app(webwiki, store).test_client()
    answer = client.get("/gadget.js")
    assert answer.status_code == 200 and answer.mimetype == "text/javascript"
    source = (Path(__file__).resolve().parents[1] / "wikivel_bot/web/static/gadget.js").read_bytes()
    assert answer.data == source
    assert b"machine suggestions" in answer.data and b"IP address" in answer.data


def test_a_token_is_made_only_for_the_wikis_own_pages(webwiki, store):  # noqa: F811
    client = make_app(webwiki, store).test_client()
    refused = client.get("/gadget/login", query_string={"origin": ELSEWHERE})
    assert refused.status_code == 400 and "data-token" not in refused.get_data(as_text=True)
    token = token_for(client, webwiki, ALICE)
    # Not for another page even once logged in.
    again = client.get("/gadget/login", query_string={"origin": ELSEWHERE})
    assert again.status_code == 400 and "data-token" not in again.get_data(as_text=True)
    # The token works from the wiki's pages, and without a cookie.
    cookieless = make_app(webwiki, store).test_client(use_cookies=False)
    me = cookieless.get("/api/me", headers=bearer(token, wiki_origin(webwiki)))
    assert me.status_code == 200 and me.get_json()["name"] == ALICE and me.get_json()["may_decide"] is True
    assert me.headers["Access-Control-Allow-Origin"] == wiki_origin(webwiki)


def test_a_decision_with_a_token_reaches_the_queue_under_the_header_rule(webwiki, store):  # noqa: F811
    client = make_app(webwiki, store).test_client()
    token = token_for(client, webwiki, ALICE)
    page = make_app(webwiki, store).test_client(use_cookies=False)
    body = {"file": "M10001", "item": "Q146", "action": "approve"}
    # Another origin, no origin, or a form body: refused before anything is recorded.
    for headers, kwargs, status in (
        (bearer(token, ELSEWHERE), {"json": body}, 403),
        ({"Authorization": f"Bearer {token}"}, {"json": body}, 403),
        (bearer(token, wiki_origin(webwiki)), {"data": "file=M10001&item=Q146&action=approve",
                                                "content_type": "application/x-www-form-urlencoded"}, 415),
        (bearer("not-a-token", wiki_origin(webwiki)), {"json": body}, 401),
    ):
        answer = page.post("/api/decisions", headers=headers, **kwargs)
        assert answer.status_code == status, (headers, answer.get_json())
        assert "Access-Control-Allow-Origin" not in answer.headers or headers.get("Origin") == wiki_origin(webwiki)
    assert decision_rows(store) == []
    ok = page.post("/api/decisions", headers=bearer(token, wiki_origin(webwiki)), json=body)
    assert ok.status_code == 200, ok.get_json()
    assert ok.get_json()["reviewer"] == ALICE
    assert pair_states(store)[(10001, "Q146")][0] == "approved"
    assert decision_rows(store) == [(10001, "Q146", "approve", ALICE, "web")]
    # The same rules as the review page: the pair moved on, the page's view is stale → 409.
    race = page.post("/api/decisions", headers=bearer(token, wiki_origin(webwiki)),
                     json={**body, "action": "reject"})
    assert race.status_code == 409 and race.get_json()["state"] == "approved"
    # The cookie path keeps its CSRF rule: the token is no CSRF token.
    cookie = client.post("/api/decisions", json={**body, "item": "Q144"}, headers={"X-CSRF-Token": token})
    assert cookie.status_code == 403


def test_a_blocked_reviewers_token_cannot_decide(webwiki, store):  # noqa: F811
    client = make_app(webwiki, store).test_client()
    token = token_for(client, webwiki, BLOCKED)
    page = make_app(webwiki, store).test_client(use_cookies=False)
    me = page.get("/api/me", headers=bearer(token, wiki_origin(webwiki))).get_json()
    assert me["may_decide"] is False and "blocked" in me["why_not"]
    answer = page.post("/api/decisions", headers=bearer(token, wiki_origin(webwiki)),
                       json={"file": "M10001", "item": "Q146", "action": "approve"})
    assert answer.status_code == 403 and "blocked" in answer.get_json()["error"]
    assert decision_rows(store) == []


def test_logging_out_ends_the_tokens(webwiki, store):  # noqa: F811
    client = make_app(webwiki, store).test_client()
    first = token_for(client, webwiki, ALICE)
    second = make_app(webwiki, store).test_client(use_cookies=False)
    headers = bearer(first, wiki_origin(webwiki))
    # The script's own log-out ends its token.
    assert second.post("/api/me/logout", headers=headers, json={}).status_code == 200
    assert second.get("/api/me", headers=headers).status_code == 401
    # The tool's /logout ends every token this browser's login handed out.
    later = client.get("/gadget/login", query_string={"origin": wiki_origin(webwiki)}).get_data(as_text=True)
    token = re.search(r'data-token="([^"]+)"', later).group(1)
    assert second.get("/api/me", headers=bearer(token, wiki_origin(webwiki))).status_code == 200
    assert client.post("/logout", data={"csrf_token": csrf_of(client)}).status_code == 302
    assert second.get("/api/me", headers=bearer(token, wiki_origin(webwiki))).status_code == 401
