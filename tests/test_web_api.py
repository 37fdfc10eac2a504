"""The JSON API with Flask's test client, logged in through the test wiki's real OAuth 2.0.

Decisions are the same rows the terminal review writes (reviewer = the wiki user name,
source ``web``); 401 without a login, 403 for a missing/wrong CSRF token or a user who may
not decide, 409 when the pair was decided elsewhere meanwhile, 429 over the rate limit.
"""

from __future__ import annotations

from tests.review_support import CAT, DOG, add_file, decision_rows, pair_states
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
from wikivel_bot.types import DecisionAction, FileState

ALICE = "Alice Uploader"


def logged_in(webwiki, store, user=ALICE, **kwargs):
    app = make_app(webwiki, store, **kwargs)
    client = app.test_client()
    assert login(client, user).status_code == 302
    return client, csrf_of(client)


def test_decision_without_login_is_401(webwiki, web_queue) -> None:
    seed(web_queue)
    client = make_app(webwiki, web_queue).test_client()
    token = csrf_of(client)  # even with a valid token for the anonymous session
    answer = post_decision(client, token, "M10001", "Q146", "approve")
    assert answer.status_code == 401
    assert "log in" in answer.json["error"]
    assert pair_states(web_queue)[(10001, "Q146")] == ("proposed", 0)


def test_missing_or_wrong_csrf_token_is_403(webwiki, web_queue) -> None:
    seed(web_queue)
    client, token = logged_in(webwiki, web_queue)
    assert post_decision(client, None, "M10001", "Q146", "approve").status_code == 403
    assert post_decision(client, token[:-1] + "x", "M10001", "Q146", "approve").status_code == 403
    assert decision_rows(web_queue) == []
    assert post_decision(client, token, "M10001", "Q146", "approve").status_code == 200


def test_web_decisions_are_the_terminal_reviews_rows(webwiki, web_queue) -> None:
    seed(web_queue)
    client, token = logged_in(webwiki, web_queue)
    for item, action in (("Q146", "approve"), ("Q144", "prominent"), ("Q5", "reject")):
        answer = post_decision(client, token, "M10001", item, action)
        assert answer.status_code == 200, answer.json
    assert post_decision(client, token, "M10002", "Q146", "skip").json["state"] == "proposed"
    states = pair_states(web_queue)
    assert states[(10001, "Q146")] == ("approved", 0)
    assert states[(10001, "Q144")] == ("approved", 1)
    assert states[(10001, "Q5")] == ("rejected", 0)
    assert decision_rows(web_queue) == [
        (10001, "Q146", "approve", ALICE, "web"), (10001, "Q144", "approve_prominent", ALICE, "web"),
        (10001, "Q5", "reject", ALICE, "web"), (10002, "Q146", "skip", ALICE, "web"),
    ]


def test_undo_takes_back_only_your_newest_decision(webwiki, web_queue) -> None:
    seed(web_queue)
    client, token = logged_in(webwiki, web_queue)
    assert post_decision(client, token, "M10001", "Q146", "reject").status_code == 200
    undone = post_decision(client, token, "M10001", "Q146", "undo")
    assert undone.status_code == 200 and undone.json["state"] == "proposed"
    assert decision_rows(web_queue) == []
    # Nothing of Alice's left on the pair: 409, and the pair stays as it is.
    assert post_decision(client, token, "M10001", "Q146", "undo").status_code == 409
    web_queue.record_decision(10001, "Q144", DecisionAction.APPROVE, "Terminal Tom", "terminal")
    refused = post_decision(client, token, "M10001", "Q144", "undo")
    assert refused.status_code == 409
    assert pair_states(web_queue)[(10001, "Q144")] == ("approved", 0)


def test_decided_elsewhere_meanwhile_is_409_naming_the_state(webwiki, web_queue) -> None:
    seed(web_queue)
    client, token = logged_in(webwiki, web_queue)
    # Another reviewer, in the terminal, while the page was open.
    web_queue.record_decision(10001, "Q146", DecisionAction.REJECT, "Terminal Tom", "terminal")
    answer = post_decision(client, token, "M10001", "Q146", "approve")
    assert answer.status_code == 409
    assert answer.json["state"] == "rejected" and answer.json["reviewer"] == "Terminal Tom"
    assert pair_states(web_queue)[(10001, "Q146")] == ("rejected", 0)


def test_bad_input_is_400_and_unknown_pairs_404(webwiki, web_queue) -> None:
    seed(web_queue)
    client, token = logged_in(webwiki, web_queue)
    assert post_decision(client, token, "M10001", "Q146", "delete").status_code == 400
    assert post_decision(client, token, "File:X.jpg", "Q146", "approve").status_code == 400
    assert post_decision(client, token, "M10001", "P31", "approve").status_code == 400
    assert client.post("/api/decisions", data="not json", headers={"X-CSRF-Token": token}).status_code == 400
    assert post_decision(client, token, "M999", "Q146", "approve").status_code == 404
    assert post_decision(client, token, "M10001", "Q42", "approve").status_code == 404
    assert decision_rows(web_queue) == []


def test_rate_limit_per_user(webwiki, web_queue) -> None:
    seed(web_queue)
    clock = FakeClock()
    client, token = logged_in(webwiki, web_queue, clock=clock, decisions_per_minute=3)
    for item in ("Q146", "Q144", "Q5"):
        assert post_decision(client, token, "M10001", item, "skip").status_code == 200
    limited = post_decision(client, token, "M10002", "Q146", "approve")
    assert limited.status_code == 429
    assert int(limited.headers["Retry-After"]) >= 1
    assert pair_states(web_queue)[(10002, "Q146")] == ("proposed", 0)
    # Another reviewer has a limit of their own.
    other, other_token = logged_in(webwiki, web_queue, user="Bob Photographer", clock=clock, decisions_per_minute=3)
    clock.now += 61
    assert post_decision(client, token, "M10002", "Q146", "approve").status_code == 200


def test_queue_filters_and_paging(webwiki, web_queue) -> None:
    add_file(web_queue, 10001, [CAT, DOG], categories=("Cats in Berlin",), day=0)
    add_file(web_queue, 10002, [DOG], categories=("Dogs",), day=1)
    add_file(web_queue, 10003, [CAT], categories=("Cats in Berlin",), linker="naive-mlp", day=2)
    client = make_app(webwiki, web_queue).test_client()

    def mids(**params):
        answer = client.get("/api/queue", query_string=params)
        assert answer.status_code == 200, answer.json
        return [f["file"] for f in answer.json["files"]], answer.json["next"]

    assert mids() == (["M10001", "M10002", "M10003"], None)
    assert mids(item="Q146") == (["M10001", "M10003"], None)
    assert mids(category="Category:Cats in Berlin")[0] == ["M10001", "M10003"]
    assert mids(linker="naive-mlp")[0] == ["M10003"]
    assert mids(min_score="0.85")[0] == ["M10001", "M10003"]
    assert mids(min_score="0.8", max_score="0.9")[0] == ["M10001", "M10002"]
    first, after = mids(limit="2")
    assert first == ["M10001", "M10002"] and after is not None
    assert mids(limit="2", after=str(after)) == (["M10003"], None)
    only_cat = client.get("/api/queue", query_string={"item": "Q146"}).json["files"][0]["candidates"]
    assert [c["item"] for c in only_cat] == ["Q146"]
    web_queue.record_decision(10002, "Q144", DecisionAction.REJECT, "Tom", "terminal")
    assert mids(state="rejected")[0] == ["M10002"]
    assert mids()[0] == ["M10001", "M10003"]
    for bad in ({"state": "eaten"}, {"limit": "0"}, {"item": "cat"}, {"min_score": "high"}, {"calibrated": "1"}):
        answer = client.get("/api/queue", query_string=bad)
        assert answer.status_code == 400 and answer.json["error"], bad


def test_file_detail_and_stats(webwiki, web_queue) -> None:
    seed(web_queue)
    client, token = logged_in(webwiki, web_queue)
    assert post_decision(client, token, "M10001", "Q146", "approve").status_code == 200
    detail = client.get("/api/files/M10001", query_string={"uselang": "de"})
    assert detail.status_code == 200
    cands = {c["item"]: c for c in detail.json["candidates"]}
    assert cands["Q146"]["state"] == "approved" and cands["Q146"]["reviewer"] == ALICE
    # The item in the reviewer's language, from the wiki (the evidence says "house cat"),
    # with the item's own P18 image.
    assert cands["Q146"]["label"] == "Hauskatze" and cands["Q146"]["label_lang"] == "de"
    assert cands["Q144"]["image"].startswith(webwiki.server + "/thumb/")
    assert client.get("/api/files/M10001", query_string={"uselang": "fr"}).json["candidates"][0]["label"] \
        == "chat domestique"
    assert client.get("/api/files/M424242").status_code == 404
    assert client.get("/api/files/10001").status_code == 400
    stats = client.get("/api/stats").json
    assert stats["queue"]["candidates"]["approved"] == 1
    assert stats["queue"]["candidates"]["proposed"] == 8
    assert stats["decisions"]["approve"] == 1 and stats["you"]["decisions"]["approve"] == 1
    assert stats["you"]["name"] == ALICE and stats["you"]["may_decide"] is True


def test_calibrated_thresholds_filter_and_show(webwiki, web_queue, tmp_path) -> None:
    import dataclasses
    import json

    from tests.web_support import SECRETS, web_settings
    from wikivel_bot.liveeval.thresholds import thresholds_document
    from wikivel_bot.web.app import create_app

    add_file(web_queue, 10001, [CAT, DOG])            # scores 0.91 and 0.82
    add_file(web_queue, 10002, [DOG], day=1)          # 0.82 only
    path = tmp_path / "thresholds.json"
    entry = {"threshold": 0.85, "held_out": {"precision": 0.92}}
    path.write_text(json.dumps(thresholds_document({"zero-shot": entry}, target=0.9, hops=0, holdout=0.5,
                                                   min_support=10, by_category=False, results=[])))
    settings = web_settings(webwiki)
    settings = dataclasses.replace(settings, linker=dataclasses.replace(settings.linker, calibrated=str(path)))
    client = create_app(settings, web_queue, secrets=SECRETS, items=None).test_client()
    calibrated = client.get("/api/queue", query_string={"calibrated": "1"}).json["files"]
    assert [(f["file"], [c["item"] for c in f["candidates"]]) for f in calibrated] == [("M10001", ["Q146"])]
    shown = {c["item"]: c["calibrated"] for c in client.get("/api/files/M10001").json["candidates"]}
    assert shown["Q146"] == {"threshold": 0.85, "passes": True, "target": 0.9, "held_out_precision": 0.92}
    assert shown["Q144"]["passes"] is False
    page = client.get("/review?file=M10001").get_data(as_text=True)
    assert "reaches the calibrated threshold 0.850" in page and "held-out precision 92 %" in page


def test_the_review_page_counts_what_the_safety_rules_withheld(webwiki, web_queue) -> None:
    """The review pages say how many suggestions the safety rules withheld, by rule,
    without naming the withheld items (a withheld person must not leak through the page)."""
    from tests.review_support import HUMAN

    file_id = add_file(web_queue, 10001, [CAT, DOG, HUMAN], title="File:Example 10001.jpg")
    web_queue.claim_files(FileState.LINKED, 10, "relink")  # a re-link, as the daemon does
    web_queue.save_candidates(file_id, [], withheld=[
        {"qid": "Q42", "rule": "named person"}, {"qid": "Q1339", "rule": "named person"},
        {"qid": "Q9174", "rule": "sensitive class"}])
    client, _token = logged_in(webwiki, web_queue)
    detail = client.get("/api/files/M10001").json
    assert detail["withheld"] == {"named person": 2, "sensitive class": 1}
    page = client.get("/review?file=M10001").get_data(as_text=True)
    assert "Withheld by the safety rules:" in page and "2 named people" in page and "1 sensitive class" in page
    assert "named person" not in page  # 29.9: the plural, not "2 named person"
    assert "Q42" not in page and "Q1339" not in page


def test_the_review_page_shows_the_cascades_alpha_and_probability(webwiki, web_queue) -> None:
    """A reviewer sees whether the picture or the words drove a cascade suggestion,
    and the verifier's calibrated probability; other linkers' suggestions show neither."""
    from wikivel_bot.types import Candidate

    file_id = add_file(web_queue, 10001, [CAT, DOG], title="File:Example 10001.jpg")
    web_queue.claim_files(FileState.LINKED, 10, "relink")
    web_queue.save_candidates(file_id, [
        Candidate(qid="Q146", score=0.9, rank=1, linker="cascade", linker_version="1", labelset_hash="h" * 16,
                  evidence={"label": "house cat", "description": "", "notes": [], "alpha": 0.62,
                            "probability": 0.91}),
        Candidate(qid="Q144", score=0.5, rank=2, linker="zero-shot", linker_version="1", labelset_hash="h" * 16,
                  evidence={"label": "dog", "description": "", "notes": []})])
    client, _token = logged_in(webwiki, web_queue)
    cands = {c["item"]: c for c in client.get("/api/files/M10001").json["candidates"]}
    assert (cands["Q146"]["alpha"], cands["Q146"]["probability"]) == (0.62, 0.91)
    assert cands["Q146"]["signals"] == "P 0.91, image 62% / text 38%"
    assert (cands["Q144"]["alpha"], cands["Q144"]["probability"], cands["Q144"]["signals"]) == (None, None, "")
    page = client.get("/review?file=M10001").get_data(as_text=True)
    assert page.count('class="signals"') == 1 and "P 0.91, image 62% / text 38%" in page


def test_a_written_pair_names_the_bot_as_its_author_and_the_reviewer_as_approver(webwiki, web_queue) -> None:
    """The reviewer approved; the bot account made the edit. "written by Alice" would credit
    a reviewer with an edit on the wiki they never made."""
    from datetime import datetime

    from sqlalchemy import select

    from wikivel_bot.queue.tables import candidates, files
    from wikivel_bot.types import Written

    seed(web_queue)
    client, token = logged_in(webwiki, web_queue)
    assert post_decision(client, token, "M10001", "Q146", "prominent").status_code == 200
    with web_queue.engine.connect() as conn:
        cand = conn.execute(select(candidates.c.id).join(files, files.c.id == candidates.c.file_id)
                            .where(files.c.page_id == 10001, candidates.c.qid == "Q146")).scalar()
    web_queue.record_edit(cand, "b-20261125000000-0001", Written(revid=901, statement_id="M10001$w1"),
                          datetime(2026, 11, 25))
    shown = {c["item"]: c for c in client.get("/api/files/M10001").json["candidates"]}
    assert shown["Q146"]["state"] == "written" and shown["Q146"]["reviewer"] == ALICE
    assert shown["Q146"]["status"] == f"written by the bot account (prominent), approved by {ALICE}"
    assert shown["Q144"]["status"] == ""  # still waiting: nothing to say
    page = client.get("/review?file=M10001").get_data(as_text=True)
    assert f"written by the bot account (prominent), approved by {ALICE}" in page
    assert f"written by {ALICE}" not in page
    # A decision on it meets the same words in the conflict message.
    refused = post_decision(client, token, "M10001", "Q146", "reject")
    body = refused.get_data(as_text=True)
    assert refused.status_code == 409 and f"written by {ALICE}" not in body
    assert f"is written by the bot account (prominent), approved by {ALICE} now" in refused.json["error"]


def test_state_words_keep_the_reviewer_as_decider_and_the_bot_as_editor() -> None:
    from wikivel_bot.core.review_rules import state_text
    from wikivel_bot.types import CandidateState as S

    assert state_text(S.APPROVED, "Ann", True) == "approved (prominent) by Ann"
    assert state_text(S.REJECTED, "Bob") == "rejected by Bob"
    assert state_text(S.PROPOSED, "Ann") == "proposed"
    assert state_text(S.WRITTEN, "Ann") == "written by the bot account, approved by Ann"
    assert state_text(S.REVERTED, "Ann", True) == "reverted: removed again by the bot account, approved by Ann"
    assert state_text(S.WRITE_FAILED, "") == "write_failed: the bot's edit failed"
    for state in S:
        assert f"{state.value} by Ann" not in state_text(state, "Ann") or state in (S.APPROVED, S.REJECTED)


def test_a_pair_whose_edit_got_no_answer_says_so(webwiki, web_queue) -> None:
    """An edit sent without an answer may still land (commons.writer.unsettled): the page
    says so beside the pair until the writer settles it, whatever the reviewer decides."""
    from sqlalchemy import select

    from wikivel_bot.queue.tables import candidates, files
    from wikivel_bot.types import DecisionAction

    seed(web_queue)
    client, token = logged_in(webwiki, web_queue)
    assert post_decision(client, token, "M10001", "Q146", "approve").status_code == 200
    with web_queue.engine.connect() as conn:
        cand = conn.execute(select(candidates.c.id).join(files, files.c.id == candidates.c.file_id)
                            .where(files.c.page_id == 10001, candidates.c.qid == "Q146")).scalar()
    (send,) = web_queue.record_sending([(cand, "M10001$w1")], "b-20261125000000-0001", "writer")
    web_queue.record_decision(10001, "Q146", DecisionAction.REJECT, ALICE, "web")
    shown = {c["item"]: c for c in client.get("/api/files/M10001").json["candidates"]}
    assert "no answer came" in shown["Q146"]["status"] and shown["Q146"]["status"].startswith("rejected")
    assert shown["Q146"]["unsettled_since"].endswith("Z")
    assert shown["Q144"]["unsettled_since"] is None and "no answer" not in shown["Q144"]["status"]
    page = client.get("/review?file=M10001").get_data(as_text=True)
    assert "no answer came: the wiki may still apply it" in page
