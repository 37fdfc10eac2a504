"""Every malformed request gets one JSON error (under /api) and no traceback in the log;
OAuth login with PKCE, and a wrong ``state`` that does not spoil the right one."""

from __future__ import annotations

import logging

import pytest

from tests.web_support import (  # noqa: F401 - fixtures are used by name
    consent,
    csrf_of,
    login,
    make_app,
    post_decision,
    query_of,
    seed,
    web_queue,
    web_settings,
    webwiki,
)
from wikivel_bot.queue import migrate
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store
from wikivel_bot.types import is_qid
from wikivel_bot.web.app import create_app
from wikivel_bot.web.secrets_file import WebSecrets

HUGE = "99999999999999999999999"


@pytest.fixture()
def lite_queue(tmp_path):
    """SQLite only, for what does not depend on the database (parsing, routing, OAuth)."""
    engine = create_engine_for(f"sqlite:///{tmp_path / 'q.sqlite'}")
    migrate.upgrade(engine)
    store = Store(engine)
    yield store
    store.close()


@pytest.fixture()
def logged_in(webwiki, web_queue, caplog):
    seed(web_queue)
    client = make_app(webwiki, web_queue).test_client()
    login(client, "Bob Photographer")
    caplog.set_level(logging.DEBUG)
    caplog.clear()
    return client


def no_traceback(caplog) -> None:
    logged = "\n".join(r.getMessage() + (str(r.exc_info) if r.exc_info else "") for r in caplog.records)
    assert "Traceback" not in logged and "Error" not in logged, logged


def test_deeply_nested_json_is_400_json(logged_in, caplog) -> None:
    token = csrf_of(logged_in)
    body = "[" * 100000 + "]" * 100000
    caplog.clear()
    too_big = logged_in.post("/api/decisions", data=body, content_type="application/json",
                             headers={"X-CSRF-Token": token})
    assert too_big.status_code == 413 and too_big.is_json and "error" in too_big.json
    deep = "[" * 20000 + "]" * 20000  # inside the size limit, beyond the parser's recursion
    answer = logged_in.post("/api/decisions", data=deep, content_type="application/json",
                            headers={"X-CSRF-Token": token})
    assert answer.status_code == 400 and answer.json == {"error": "the JSON body is nested too deeply"}
    no_traceback(caplog)


@pytest.mark.parametrize("path", ["/api/queue", "/review", "/grid?item=Q146&"])
@pytest.mark.parametrize("query", [f"after={HUGE}", "after=-1", "after=%D9%A1%D9%A2", "limit=0", "limit=101",
                                   "limit=%D9%A1%D9%A2", "min_score=nan", "max_score=inf", "min_score=1e999"])
def test_numbers_out_of_range_are_400_anonymously(webwiki, lite_queue, caplog, path, query) -> None:
    seed(lite_queue, (10001,))
    client = make_app(webwiki, lite_queue, items=None).test_client()
    sep = "" if path.endswith("&") else "?"
    answer = client.get(path + sep + query)
    assert answer.status_code == 400, (path, query, answer.data[:200])
    if path.startswith("/api/"):
        assert answer.is_json and "error" in answer.json
    no_traceback(caplog)


def test_404_405_under_api_are_json(webwiki, lite_queue, caplog) -> None:
    app = make_app(webwiki, lite_queue, items=None)
    app.testing = False  # as in production: an unexpected error would be logged, not raised
    client = app.test_client()
    caplog.set_level(logging.DEBUG)
    missing = client.get("/api/no-such-thing")
    assert missing.status_code == 404 and missing.is_json and missing.json["error"]
    wrong = client.get("/api/decisions")
    assert wrong.status_code == 405 and wrong.is_json and "POST" in wrong.headers["Allow"]
    assert client.get("/api/files/M1").is_json  # not queued: the API's own 404
    # Outside /api the pages keep their HTML errors.
    page = client.get("/no-such-page")
    assert page.status_code == 404 and not page.is_json
    no_traceback(caplog)


def test_login_not_set_up_names_the_settings_and_variables(webwiki, lite_queue) -> None:
    no_id = make_app(webwiki, lite_queue, items=None, oauth_client_id="").test_client().get("/login")
    text = no_id.get_data(as_text=True)
    assert no_id.status_code == 503 and "web.oauth_client_id" in text and "WIKIVEL_OAUTH_CLIENT_SECRET" not in text
    app = create_app(web_settings(webwiki), lite_queue, secrets=WebSecrets(session_secret="s" * 40), items=None)
    no_secret = app.test_client().get("/login")
    text = no_secret.get_data(as_text=True)
    assert no_secret.status_code == 503 and "web.oauth_client_id" not in text
    assert "web.secrets_file" in text and "WIKIVEL_OAUTH_CLIENT_SECRET" in text and "WIKIVEL_SESSION_SECRET" in text


def test_a_server_error_under_api_is_json_too(webwiki, lite_queue, monkeypatch, caplog) -> None:
    app = make_app(webwiki, lite_queue, items=None)
    app.testing = False  # answer as in production instead of raising into the test

    def broken() -> None:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(lite_queue, "counts", broken)
    answer = app.test_client().get("/api/stats")
    assert answer.status_code == 500 and answer.is_json and answer.json["error"]
    assert "a bug of ours" not in answer.get_data(as_text=True)
    # Our bug: logged with its traceback, once.
    assert len([r for r in caplog.records if r.exc_info]) == 1


def test_item_ids_are_ascii_and_file_ids_any_case(logged_in) -> None:
    for odd in ("Q٤٤٢١", "Q²", "Q0146", "q146"):
        assert not is_qid(odd)
    assert logged_in.get("/api/queue?item=Q%D9%A4%D9%A4").status_code == 400
    assert logged_in.get("/api/queue?item=Q%C2%B2").status_code == 400
    token = csrf_of(logged_in)
    assert post_decision(logged_in, token, "M10001", "Q²", "skip").status_code == 400
    assert logged_in.get("/api/files/m10001").json["file"] == "M10001"
    typed = post_decision(logged_in, token, " m10001", "Q146", "skip")
    assert typed.status_code == 200 and typed.json["file"] == "M10001"
    assert post_decision(logged_in, token, "M" + HUGE, "Q146", "skip").status_code == 400


def test_login_sends_a_pkce_challenge_and_the_verifier(webwiki, lite_queue) -> None:
    client = make_app(webwiki, lite_queue).test_client()
    start = client.get("/login")
    params = query_of(start.headers["Location"])
    assert params["code_challenge_method"] == "S256" and len(params["code_challenge"]) == 43
    with client.session_transaction() as sess:
        sess["oauth_verifier"] = "a-verifier-that-does-not-match-the-challenge-sent-0123456789"
    callback = consent(start.headers["Location"], "Bob Photographer")
    answer = client.get("/oauth/callback?" + callback.split("?", 1)[1])
    # The wiki checks the verifier against the challenge: a wrong one gets no token.
    assert answer.status_code == 502 and "you" not in client.get("/api/stats").json
    done = login(client, "Bob Photographer")
    assert done.status_code == 302 and client.get("/api/stats").json["you"]["name"] == "Bob Photographer"


def test_a_wrong_state_does_not_spoil_the_right_one(webwiki, lite_queue) -> None:
    client = make_app(webwiki, lite_queue).test_client()
    start = client.get("/login?next=/grid")
    callback = consent(start.headers["Location"], "Bob Photographer")
    right = query_of(callback)
    forged = client.get("/oauth/callback?code=stolen&state=not-the-state")
    assert forged.status_code == 400
    done = client.get(f"/oauth/callback?code={right['code']}&state={right['state']}")
    assert done.status_code == 302 and done.headers["Location"] == "/grid"
    assert client.get("/api/stats").json["you"]["name"] == "Bob Photographer"
    # Used once: the same callback again is stale.
    assert client.get(f"/oauth/callback?code={right['code']}&state={right['state']}").status_code == 400
