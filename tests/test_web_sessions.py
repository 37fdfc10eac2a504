"""Logins that end and blocks that bite, and the batch revert that asks first: through the
real app on every queue backend, the OAuth dance and the profile re-reads over real HTTP
against the test wiki, time moved by hand."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import requests

from tests.review_support import decision_rows, pair_states
from tests.testwiki.model import User
from tests.web_support import (  # noqa: F401 - fixtures are used by name
    BLOCKED,
    OPERATOR,
    FakeClock,
    csrf_of,
    login,
    make_app,
    post_decision,
    seed,
    web_queue,
    webwiki,
)
from wikivel_bot.queue.tables import web_sessions
from wikivel_bot.review.actions import decide
from wikivel_bot.types import DecisionAction, Written
from wikivel_bot.web.sessions import PROFILE_RETRY_S, retry_in

COOKIE = "wikivel_session"
TESSA = "Tessa Temporary"  # blocked and demoted by these tests, so nobody else's user
REASON = "Sockpuppetry: see <b>SPI</b>"  # an admin's words, shown as text


def users_reads(wiki) -> int:
    """How often the app re-read a profile from the wiki (``list=users``)."""
    return sum(1 for r in wiki.requests if r.params.get("list") == "users")


def fresh_tessa(wiki) -> None:
    """TESSA as a reviewer who may decide (a block from an earlier test undone)."""
    if wiki.store.user(TESSA) is None:
        wiki.store.add_user(User(name=TESSA, userid=299, groups=["autoconfirmed"]))
    control(wiki, user=TESSA, blocked=False, groups=["autoconfirmed"])


def control(wiki, **body) -> dict:
    """What an admin does on the wiki, through the test wiki's control endpoint."""
    answer = requests.post(wiki.server + "/_control/block", json=body, timeout=120)  # hang guard
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_replayed_cookie_after_logout_opens_nothing(webwiki, web_queue) -> None:
    seed(web_queue)
    app = make_app(webwiki, web_queue)
    client = app.test_client()
    login(client, "Bob Photographer")
    token = csrf_of(client)
    saved = client.get_cookie(COOKIE).value
    assert post_decision(client, token, "M10001", "Q146", "skip").status_code == 200
    assert client.post("/logout", data={"csrf_token": token}).status_code == 302
    # The database keeps only a hash of the session id, never the id the cookie carries.
    with web_queue.engine.connect() as conn:
        assert conn.execute(web_sessions.select()).all() == []
    # Another browser (or an attacker) with the saved copy of the cookie: logged out.
    replay = app.test_client()
    replay.set_cookie(COOKIE, saved)
    refused = post_decision(replay, token, "M10001", "Q146", "approve")
    assert refused.status_code == 401 and refused.json["error"].startswith("log in first")
    assert "you" not in replay.get("/api/stats").json
    page = replay.get("/review").get_data(as_text=True)
    assert 'id="login"' in page and "Bob Photographer" not in page
    assert [row[2] for row in decision_rows(web_queue)] == ["skip"]


def test_a_login_ends_at_its_absolute_lifetime_however_active(webwiki, web_queue) -> None:
    seed(web_queue)
    clock = FakeClock()
    client = make_app(webwiki, web_queue, clock=clock, session_hours=1.0).test_client()
    login(client, "Bob Photographer")
    token = csrf_of(client)
    # Busy every ten minutes: no request renews the login, nor re-sends the cookie.
    for minute in (10, 20, 30, 40, 50, 59):
        clock.now = 1000.0 + minute * 60
        answer = client.get("/api/stats")
        assert answer.json["you"]["name"] == "Bob Photographer", minute
        assert "Set-Cookie" not in answer.headers
    clock.now = 1000.0 + 3600
    assert post_decision(client, token, "M10001", "Q146", "skip").status_code == 401
    assert "you" not in client.get("/api/stats").json
    assert decision_rows(web_queue) == []


def test_the_cookie_lives_only_as_long_as_the_login(webwiki, web_queue) -> None:
    client = make_app(webwiki, web_queue, session_hours=2.0).test_client()
    done = login(client, "Bob Photographer")
    cookie = done.headers["Set-Cookie"]
    expires = datetime.strptime(cookie.split("Expires=")[1].split(";")[0], "%a, %d %b %Y %H:%M:%S GMT")
    assert abs((expires - datetime.utcnow()).total_seconds() - 7200) < 600


def test_a_block_on_the_wiki_bites_within_the_check_interval(webwiki, web_queue) -> None:
    seed(web_queue)
    fresh_tessa(webwiki)
    clock = FakeClock()
    client = make_app(webwiki, web_queue, clock=clock, profile_check_minutes=5.0).test_client()
    login(client, TESSA)
    token = csrf_of(client)
    assert post_decision(client, token, "M10001", "Q146", "skip").status_code == 200
    control(webwiki, user=TESSA, blocked=True, reason=REASON)
    try:
        # Within the interval the profile read at login stands: no wiki request per click.
        reads = users_reads(webwiki)
        clock.now += 4 * 60
        assert post_decision(client, token, "M10001", "Q144", "skip").status_code == 200
        assert users_reads(webwiki) == reads
        # Once the interval has passed, the decision waits for a fresh read: blocked, 403.
        clock.now += 60
        refused = post_decision(client, token, "M10002", "Q146", "approve")
        assert refused.status_code == 403
        assert refused.json["error"] == f"{TESSA} is blocked on the wiki and cannot review (reason: {REASON})"
        assert users_reads(webwiki) == reads + 1
        # The page says so, with the wiki's reason as text (escaped, never markup).
        page = client.get("/review").get_data(as_text=True)
        assert f"{TESSA} is blocked on the wiki and cannot review (reason: Sockpuppetry: see &lt;b&gt;" in page
        assert "<b>" not in page
        assert client.get("/api/stats").json["you"]["may_decide"] is False
        # Unblocked but no longer in an allowed group: may look, not decide.
        control(webwiki, user=TESSA, blocked=False, groups=[])
        clock.now += 5 * 60
        lost = post_decision(client, token, "M10002", "Q146", "approve")
        assert lost.status_code == 403 and "may look but not decide" in lost.json["error"]
        # Rights back: deciding again after the next read.
        control(webwiki, user=TESSA, blocked=False, groups=["autoconfirmed"])
        clock.now += 5 * 60
        assert post_decision(client, token, "M10002", "Q146", "skip").status_code == 200
    finally:
        control(webwiki, user=TESSA, blocked=False, groups=["autoconfirmed"])
    assert [(p, q, a) for p, q, a, *_ in decision_rows(web_queue)] == [
        (10001, "Q146", "skip"), (10001, "Q144", "skip"), (10002, "Q146", "skip")]


def test_a_blocked_login_shows_the_wikis_reason_at_once(webwiki, web_queue) -> None:
    # The OAuth profile says only "blocked": the app asks list=users why, once, at login.
    client = make_app(webwiki, web_queue).test_client()
    reads = users_reads(webwiki)
    login(client, BLOCKED)
    assert users_reads(webwiki) == reads + 1
    seed(web_queue)
    page = client.get("/review").get_data(as_text=True)
    assert f"{BLOCKED} is blocked on the wiki and cannot review (reason: Vandalism)" in page
    # The grid's bulk buttons too: greyed out, pointing at the reason.
    grid = client.get("/grid?item=Q146").get_data(as_text=True)
    assert 'id="bulk-approve" disabled aria-describedby=decide-why' in grid
    assert re.search(r'<p id="decide-why"[^>]*>[^<]*blocked on the wiki and cannot review \(reason: Vandalism\)', grid)
    # Logging in with a profile that is not blocked asks nothing more.
    other = make_app(webwiki, web_queue).test_client()
    login(other, "Bob Photographer")
    assert users_reads(webwiki) == reads + 1


def test_decisions_wait_while_the_wiki_cannot_say_who_is_blocked(webwiki, web_queue) -> None:
    seed(web_queue)
    clock = FakeClock()
    app = make_app(webwiki, web_queue, clock=clock, profile_check_minutes=5.0)
    client = app.test_client()
    login(client, "Bob Photographer")
    token = csrf_of(client)
    ctx = app.extensions["wikivel"]
    working = ctx.oauth_base
    ctx.oauth_base = "http://127.0.0.1:9/w/rest.php"  # nothing listens there: connection refused
    clock.now += 5 * 60
    refused = post_decision(client, token, "M10001", "Q146", "approve")
    assert refused.status_code == 503 and "cannot re-check Bob Photographer" in refused.json["error"]
    assert client.get("/review").status_code == 200  # looking goes on with the last profile
    ctx.oauth_base = working
    clock.now += PROFILE_RETRY_S  # the wiki is asked again after the pause (next test)
    assert post_decision(client, token, "M10001", "Q146", "approve").status_code == 200
    assert [row[2] for row in decision_rows(web_queue)] == ["approve"]


def test_an_outage_is_asked_once_per_pause_not_on_every_page(webwiki, web_queue) -> None:
    seed(web_queue)
    clock = FakeClock()
    client = make_app(webwiki, web_queue, clock=clock, profile_check_minutes=5.0).test_client()
    login(client, "Bob Photographer")
    token = csrf_of(client)
    # Another web worker, the same login: it sees what this one noted, through the database.
    other = make_app(webwiki, web_queue, clock=clock, profile_check_minutes=5.0).test_client()
    other.set_cookie(COOKIE, client.get_cookie(COOKIE).value)
    reads = users_reads(webwiki)
    down = webwiki.faults.add("users", "http503", times=None)  # the wiki's API is down
    try:
        clock.now += 5 * 60  # the re-read is due
        failed_at = clock.now
        # The first request asks and fails; it and every page after it in the pause are
        # served with the last profile, without asking the wiki again.
        for n, path in enumerate(("/review", "/grid?item=Q146", "/api/stats", "/review", "/api/stats")):
            clock.now = failed_at + n * 5
            assert (client if n % 2 else other).get(path).status_code == 200, path
        assert client.get("/api/stats").json["you"]["name"] == "Bob Photographer"
        assert users_reads(webwiki) == reads + 1 and down.fired == 1
        # A decision in the pause is not accepted unchecked, and does not ask either.
        clock.now = failed_at + 21
        refused = post_decision(client, token, "M10001", "Q146", "skip")
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "9"
        assert refused.json["error"] == (
            "cannot re-check Bob Photographer's wiki account now (the wiki did not answer): try again in 9 s")
        assert users_reads(webwiki) == reads + 1
        # The pause over, the next request asks once more: still down, a new pause.
        clock.now = failed_at + PROFILE_RETRY_S
        again = post_decision(other, token, "M10001", "Q146", "skip")
        assert again.status_code == 503 and again.headers["Retry-After"] == str(PROFILE_RETRY_S)
        assert again.json["error"] == ("cannot re-check Bob Photographer's wiki account now (HTTPError): "
                                       f"try again in {PROFILE_RETRY_S} s")
        assert users_reads(webwiki) == reads + 2
        clock.now += 10
        assert client.get("/review").status_code == 200 and other.get("/review").status_code == 200
        assert users_reads(webwiki) == reads + 2 and down.fired == 2
    finally:
        webwiki.faults.remove(down)
    # The wiki is back: asked after the pause, once; the good answer clears the note.
    clock.now += PROFILE_RETRY_S
    assert post_decision(client, token, "M10001", "Q146", "skip").status_code == 200
    assert users_reads(webwiki) == reads + 3
    with web_queue.engine.connect() as conn:
        assert [row.check_failed_at for row in conn.execute(web_sessions.select())] == [None]
    # Checked now: the next decisions within the interval ask nothing.
    clock.now += 60
    assert post_decision(other, token, "M10001", "Q144", "skip").status_code == 200
    assert users_reads(webwiki) == reads + 3
    assert [(p, q, a) for p, q, a, *_ in decision_rows(web_queue)] == [(10001, "Q146", "skip"), (10001, "Q144", "skip")]


def test_the_pause_after_a_failed_read_is_counted_from_the_failure() -> None:
    failed = datetime(2026, 11, 25, 12, 0, 0)
    assert retry_in(None, failed) == 0
    assert retry_in(failed, failed) == PROFILE_RETRY_S
    assert retry_in(failed, failed + timedelta(seconds=PROFILE_RETRY_S - 0.5)) == 1
    assert retry_in(failed, failed + timedelta(seconds=PROFILE_RETRY_S)) == 0
    # A note from a worker whose clock runs ahead does not hold this one back.
    assert retry_in(failed + timedelta(seconds=5), failed) == 0


def test_revert_asks_first_then_redirects(webwiki, web_queue) -> None:
    seed(web_queue)
    for mid, qid in (("M10001", "Q146"), ("M10001", "Q144"), ("M10002", "Q146")):
        decide(web_queue, mid, [qid], DecisionAction.APPROVE, "Bob Photographer", source="test")
    with web_queue.engine.connect() as conn:
        ids = {(r.page_id, r.qid): r.id for r in conn.execute(_pairs_query())}
    for n, pair in enumerate(((10001, "Q146"), (10001, "Q144"), (10002, "Q146"))):
        web_queue.record_edit(ids[pair], "b-9", Written(revid=500 + n, statement_id=f"M{pair[0]}$g{n}"), datetime.utcnow())
    calls = []
    app = make_app(webwiki, web_queue)
    app.extensions["wikivel"].reverter = lambda batch, who: calls.append((batch, who)) or ["3 statements removed"]
    client = app.test_client()
    login(client, OPERATOR)
    batch_page = client.get("/batches/b-9").get_data(as_text=True)
    assert 'href="/batches/b-9/revert"' in batch_page  # a link to the question, not a form that acts
    ask = client.get("/batches/b-9/revert")
    text = ask.get_data(as_text=True)
    assert ask.status_code == 200 and calls == []
    assert "<strong>3</strong> depicts statements" in text and "<strong>2</strong> files" in text
    done = client.post("/batches/b-9/revert", data={"csrf_token": csrf_of(client)})
    assert done.status_code == 303 and done.headers["Location"].endswith("/batches/b-9")
    assert calls == [("b-9", OPERATOR)]
    shown = client.get("/batches/b-9").get_data(as_text=True)
    assert "3 statements removed" in shown
    # A reload is a GET of the batch page: nothing re-posted, the outcome shown once.
    again = client.get("/batches/b-9").get_data(as_text=True)
    assert "3 statements removed" not in again and calls == [("b-9", OPERATOR)]
    # Someone who is no operator is not even asked.
    other = make_app(webwiki, web_queue).test_client()
    login(other, "Bob Photographer")
    assert other.get("/batches/b-9/revert").status_code == 403
    assert pair_states(web_queue)[(10001, "Q146")][0] == "written"


def _pairs_query():
    from sqlalchemy import select

    from wikivel_bot.queue.tables import candidates, files

    return select(files.c.page_id, candidates.c.qid, candidates.c.id).join(files, files.c.id == candidates.c.file_id)
