"""Partial blocks take what they cover: an approval makes the bot edit the file's structured
data (its File: page, namespace 6), so a block on files or on editing stops all decisions, a
block on some File: pages stops the decisions on those files, and any other partial block
leaves reviewing alone. Through the real app on every queue backend, the OAuth dance and the
profile reads (``list=users``, then ``list=blocks`` for the restrictions) over real HTTP
against the test wiki, time moved by hand. Sitewide blocks: tests/test_web_sessions.py."""

from __future__ import annotations

from datetime import datetime

import pytest
import requests
from sqlalchemy import select

from tests.review_support import decision_rows, pair_states
from tests.testwiki.model import User
from tests.web_support import (  # noqa: F401 - fixtures are used by name
    FakeClock,
    csrf_of,
    login,
    make_app,
    post_decision,
    seed,
    web_queue,
    webwiki,
)
from wikivel_bot.queue.tables import candidates, files, web_sessions
from wikivel_bot.review.actions import decide
from wikivel_bot.types import DecisionAction, Written
from wikivel_bot.web.blocks import PartialBlock, from_blocks
from wikivel_bot.web.sessions import PROFILE_RETRY_S

PAULA = "Paula Partial"  # partially blocked by these tests, nobody else's user
BLOCK = "partial block #1298"  # the test wiki's block id: 1000 + the user id
REASON = "Edit warring on <i>one</i> file"


def block(wiki, partial=None, blocked=True) -> None:
    """What an admin does on the wiki: block PAULA (partially with ``partial``: pages,
    namespaces, actions) or lift the block."""
    body = {"user": PAULA, "blocked": blocked, "groups": ["autoconfirmed"], "reason": REASON}
    if partial is not None:
        body["partial"] = partial
    answer = requests.post(wiki.server + "/_control/block", json=body, timeout=120)  # hang guard
    assert answer.status_code == 200, answer.text


@pytest.fixture()
def paula(webwiki):
    """PAULA, unblocked, in an allowed group; unblocked again after the test."""
    if webwiki.store.user(PAULA) is None:
        webwiki.store.add_user(User(name=PAULA, userid=298, groups=["autoconfirmed"]))
    block(webwiki, blocked=False)
    yield PAULA
    block(webwiki, blocked=False)


def blocks_reads(wiki) -> int:
    """How often the app read a block's restrictions (``list=blocks``)."""
    return sum(1 for r in wiki.requests if r.params.get("list") == "blocks")


@pytest.mark.parametrize("partial, covering", [
    ({"namespaces": [6]}, "the File namespace"),
    ({"namespaces": [2, 6], "pages": ["User:Paula Partial"]}, "the File namespace"),
    ({"actions": ["upload", "edit"]}, "the action edit"),
])
def test_a_partial_block_on_files_stops_decisions_like_a_sitewide_one(webwiki, web_queue, paula, partial,
                                                                      covering) -> None:
    seed(web_queue)
    block(webwiki, partial)
    client = make_app(webwiki, web_queue).test_client()
    reads = blocks_reads(webwiki)
    login(client, PAULA)  # the OAuth profile says "blocked": the restrictions are read at once
    assert blocks_reads(webwiki) == reads + 1
    refused = post_decision(client, csrf_of(client), "M10001", "Q146", "approve")
    assert refused.status_code == 403
    assert refused.json["error"] == (f"{PAULA} is blocked on the wiki from editing files ({BLOCK} on {covering}) "
                                     f"and cannot review (reason: {REASON})")
    page = client.get("/review").get_data(as_text=True)
    assert "from editing files" in page and "<i>one</i>" not in page
    assert client.get("/api/stats").json["you"]["may_decide"] is False
    assert decision_rows(web_queue) == []


def test_a_partial_block_on_pages_refuses_only_those_files(webwiki, web_queue, paula) -> None:
    seed(web_queue)
    clock = FakeClock()
    app = make_app(webwiki, web_queue, clock=clock, profile_check_minutes=5.0)
    client = app.test_client()
    login(client, PAULA)
    token = csrf_of(client)
    assert post_decision(client, token, "M10002", "Q146", "skip").status_code == 200
    # Blocked from one file, named by its title as the queue stores it (underscores and all).
    block(webwiki, {"pages": ["File:Example_10002.jpg", "Commons:Village pump"]})
    clock.now += 5 * 60  # the re-read is due: the next decision waits for it
    refused = post_decision(client, token, "M10002", "Q146", "approve")
    assert refused.status_code == 403
    assert refused.json["error"] == (f"{PAULA} is blocked on the wiki from editing File:Example 10002.jpg "
                                     f"({BLOCK}, reason: {REASON}) and cannot decide on it")
    # Undo and skip too: nothing on that file goes through this reviewer.
    assert post_decision(client, token, "M10002", "Q146", "undo").status_code == 403
    # The other files are theirs to review, on every worker (the restrictions are in the row).
    assert post_decision(client, token, "M10001", "Q146", "approve").status_code == 200
    other = make_app(webwiki, web_queue, clock=clock, profile_check_minutes=5.0).test_client()
    other.set_cookie("wikivel_session", client.get_cookie("wikivel_session").value)
    assert post_decision(other, token, "M10002", "Q144", "reject").status_code == 403
    assert post_decision(other, token, "M10003", "Q146", "reject").status_code == 200
    with web_queue.engine.connect() as conn:
        (row,) = conn.execute(web_sessions.select()).all()
    assert row.blocked is False or row.blocked == 0
    assert [p["title"] for p in row.block_restrictions["pages"]] == ["File:Example 10002.jpg", "Commons:Village pump"]
    # The page says so quietly; the buttons stay.
    page = client.get("/review").get_data(as_text=True)
    assert (f"A {BLOCK} on the wiki keeps you from editing File:Example 10002.jpg: decisions on those files "
            "are refused; the others are yours to review.") in page
    assert client.get("/api/stats").json["you"]["may_decide"] is True
    # Block lifted: the file is theirs again after the next read.
    block(webwiki, blocked=False)
    clock.now += 5 * 60
    assert post_decision(client, token, "M10002", "Q146", "approve").status_code == 200
    assert "partial block" not in client.get("/review").get_data(as_text=True)
    assert [(p, q, a) for p, q, a, *_ in decision_rows(web_queue)] == [
        (10002, "Q146", "skip"), (10001, "Q146", "approve"), (10003, "Q146", "reject"), (10002, "Q146", "approve")]


@pytest.mark.parametrize("partial, note", [
    ({"namespaces": [2], "pages": ["User talk:Paula Partial"]}, "(namespace 2, User talk:Paula Partial)"),
    ({"actions": ["upload", "move", "create", "thanks", "sendemail"]},
     "(action upload, action move, action create, action thanks, action sendemail)"),
])
def test_a_partial_block_elsewhere_leaves_reviewing_alone(webwiki, web_queue, paula, partial, note) -> None:
    seed(web_queue)
    block(webwiki, partial)
    client = make_app(webwiki, web_queue).test_client()
    login(client, PAULA)
    token = csrf_of(client)
    assert post_decision(client, token, "M10001", "Q146", "approve").status_code == 200
    assert post_decision(client, token, "M10002", "Q146", "reject").status_code == 200
    page = client.get("/review").get_data(as_text=True)
    assert f"A {BLOCK} on the wiki {note} does not touch files." in page
    assert "cannot review" not in page
    assert [a for _, _, a, *_ in decision_rows(web_queue)] == ["approve", "reject"]


def test_restrictions_that_cannot_be_read_refuse_decisions(webwiki, web_queue, paula) -> None:
    seed(web_queue)
    clock = FakeClock()
    client = make_app(webwiki, web_queue, clock=clock, profile_check_minutes=5.0).test_client()
    login(client, PAULA)
    token = csrf_of(client)
    block(webwiki, {"pages": ["File:Example 10002.jpg"]})
    down = webwiki.faults.add("blocks", "http500", times=None)  # list=users answers, list=blocks not
    try:
        # A re-read: the profile counts as unread; decisions wait (503), even on other files.
        clock.now += 5 * 60
        refused = post_decision(client, token, "M10001", "Q146", "approve")
        assert refused.status_code == 503 and refused.headers["Retry-After"] == str(PROFILE_RETRY_S)
        assert refused.json["error"] == (f"cannot re-check {PAULA}'s wiki account now (its partial block's "
                                         f"restrictions could not be read: HTTPError): try again in {PROFILE_RETRY_S} s")
        assert client.get("/review").status_code == 200  # looking goes on
        # A login meanwhile: blocked, with the wiki's reason, until the next check.
        fresh = make_app(webwiki, web_queue, clock=clock, profile_check_minutes=5.0).test_client()
        login(fresh, PAULA)
        blocked = post_decision(fresh, csrf_of(fresh), "M10001", "Q146", "approve")
        assert blocked.status_code == 403
        assert blocked.json["error"] == f"{PAULA} is blocked on the wiki and cannot review (reason: {REASON})"
    finally:
        webwiki.faults.remove(down)
    # Readable again after the pause: only the blocked file is refused.
    clock.now += PROFILE_RETRY_S
    assert post_decision(client, token, "M10002", "Q146", "approve").status_code == 403
    assert post_decision(client, token, "M10001", "Q146", "approve").status_code == 200
    assert [a for _, _, a, *_ in decision_rows(web_queue)] == ["approve"]


def test_the_restrictions_are_read_in_mediawikis_format() -> None:
    sitewide = {"id": 7, "partial": False, "restrictions": []}
    pages = {"id": 8, "partial": True, "restrictions": {
        "pages": [{"id": 10002, "ns": 6, "title": "File:Example 10002.jpg"},
                  {"id": 55, "ns": 4, "title": "Commons:Village pump"}]}}
    upload = {"id": 9, "partial": True, "restrictions": {"namespaces": [2], "actions": ["upload"]}}
    assert from_blocks([pages, sitewide]) is None  # one sitewide block: no restriction narrows it
    both = from_blocks([pages, upload])
    assert both is not None and both.named() == "partial blocks #8, #9" and both.covers_files() == ""
    # By page id (a file renamed since it was queued) or by title, as MediaWiki compares titles.
    assert both.covers(10002, "File:Renamed.jpg") and both.covers(1, "File:example_10002.jpg")
    assert not both.covers(55, "File:Other.jpg")  # page 55 is no file: its block is not about files
    assert not both.covers(10001, "File:Example 10001.jpg")
    assert [p[2] for p in both.file_pages()] == ["File:Example 10002.jpg"]
    assert PartialBlock.from_json(both.to_json()) == both and PartialBlock.from_json(None) is None
    assert from_blocks([{"id": 3, "partial": True, "restrictions": {"actions": ["mediainfo-edit"]}}]).covers_files() \
        == "the action mediainfo-edit"  # an action not known to be unrelated counts against the reviewer
    for bad in ([], [{"id": 3, "partial": True, "restrictions": "pages"}], [{"partial": True, "restrictions": {}}]):
        with pytest.raises((ValueError, KeyError)):
            from_blocks(bad)


def test_an_operator_may_not_revert_a_batch_on_files_a_partial_block_names(webwiki, web_queue, paula) -> None:
    seed(web_queue)
    for mid in ("M10001", "M10002"):
        decide(web_queue, mid, ["Q146"], DecisionAction.APPROVE, "Bob Photographer", source="test")
    with web_queue.engine.connect() as conn:
        ids = {r.page_id: r.id for r in conn.execute(
            select(files.c.page_id, candidates.c.id).join(files, files.c.id == candidates.c.file_id)
            .where(candidates.c.qid == "Q146"))}
    web_queue.record_edit(ids[10001], "b-1", Written(revid=601, statement_id="M10001$g1"), datetime.utcnow())
    web_queue.record_edit(ids[10002], "b-2", Written(revid=602, statement_id="M10002$g2"), datetime.utcnow())
    block(webwiki, {"pages": ["File:Example 10002.jpg"]})
    calls = []
    app = make_app(webwiki, web_queue, operators=(PAULA,))
    app.extensions["wikivel"].reverter = lambda batch, who: calls.append(batch) or ["1 statement removed"]
    client = app.test_client()
    login(client, PAULA)
    refused = client.get("/batches/b-2/revert")
    assert refused.status_code == 403 and "from editing File:Example 10002.jpg" in refused.get_data(as_text=True)
    token = csrf_of(client)
    assert client.post("/batches/b-2/revert", data={"csrf_token": token}).status_code == 403
    assert client.post("/batches/b-1/revert", data={"csrf_token": token}).status_code == 303
    assert calls == ["b-1"] and pair_states(web_queue)[(10002, "Q146")][0] == "written"
