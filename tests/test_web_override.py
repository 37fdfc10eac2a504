"""No silent override of another reviewer, through the real app on SQLite,
PostgreSQL and MariaDB: the page sends the state it saw, the store changes the pair only
while it is still so (compare-and-set in one transaction), and only an operator may replace
another reviewer's decision — recorded in the audit trail as an override.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional

from sqlalchemy import select

from tests.review_support import decision_rows, pair_states
from tests.web_support import (  # noqa: F401 - fixtures are used by name
    OPERATOR,
    csrf_of,
    login,
    make_app,
    seed,
    web_queue,
    webwiki,
)
from wikivel_bot.config import WebSettings
from wikivel_bot.errors import DecisionConflict
from wikivel_bot.queue import reviews
from wikivel_bot.queue.store import Store
from wikivel_bot.queue.store.decisions import Seen
from wikivel_bot.queue.tables import candidates, decisions, files
from wikivel_bot.review.audit import audit_lines, audit_record
from wikivel_bot.types import CandidateState, DecisionAction
from wikivel_bot.web.reviewer import Reviewer

ALICE = "Alice Uploader"
BOB = "Bob Photographer"
APPROVED_BY_ALICE = {"state": "approved", "reviewer": ALICE, "prominent": False}


def client_of(webwiki: Any, store: Store, user: str) -> Any:  # noqa: F811
    client = make_app(webwiki, store).test_client()
    assert login(client, user).status_code == 302
    client.token = csrf_of(client)
    return client


def decide(client: Any, item: str, action: str, seen: Optional[Dict[str, Any]] = None, file: str = "M10001") -> Any:
    body: Dict[str, Any] = {"file": file, "item": item, "action": action}
    if seen is not None:
        body["seen"] = seen
    return client.post("/api/decisions", json=body, headers={"X-CSRF-Token": client.token})


def reviewers(store: Store) -> Dict[str, Optional[str]]:
    """{qid: the pair's reviewer} of M10001's cat and dog."""
    query = (select(candidates.c.qid, candidates.c.reviewer).join(files, files.c.id == candidates.c.file_id)
             .where(files.c.page_id == 10001, candidates.c.qid.in_(("Q146", "Q144"))))
    with store.transaction() as conn:
        return {r.qid: r.reviewer for r in conn.execute(query)}


def overrides(store: Store) -> List[tuple]:
    with store.transaction() as conn:
        return [tuple(r) for r in conn.execute(
            select(decisions.c.action, decisions.c.reviewer, decisions.c.overrode).order_by(decisions.c.id))]


def test_b_over_a_approval_is_409_naming_who_and_nothing_changes(webwiki, web_queue) -> None:  # noqa: F811
    seed(web_queue)
    alice, bob = client_of(webwiki, web_queue, ALICE), client_of(webwiki, web_queue, BOB)
    assert decide(alice, "Q146", "approve").status_code == 200
    before_states, before_rows = pair_states(web_queue), decision_rows(web_queue)
    # Bob's page still showed the pair waiting (a stale page): every key he presses is refused.
    for action in ("approve", "prominent", "reject", "skip"):
        answer = decide(bob, "Q146", action, {"state": "proposed"})
        assert answer.status_code == 409, (action, answer.json)
        assert answer.json["state"] == "approved" and answer.json["reviewer"] == ALICE
        assert f"approved by {ALICE}" in answer.json["error"]
    # Without "seen" the API assumes a pair waiting for review: refused the same way.
    assert decide(bob, "Q146", "reject").status_code == 409
    # Bob saw Alice's approval and disagrees: still not his to replace.
    answer = decide(bob, "Q146", "reject", APPROVED_BY_ALICE)
    assert answer.status_code == 409
    assert "only an operator may override" in answer.json["error"] and ALICE in answer.json["error"]
    assert pair_states(web_queue) == before_states and decision_rows(web_queue) == before_rows
    assert reviewers(web_queue)["Q146"] == ALICE
    # Alice may change her own mind, when she says what she saw.
    assert decide(alice, "Q146", "prominent", APPROVED_BY_ALICE).status_code == 200
    assert pair_states(web_queue)[(10001, "Q146")] == ("approved", 1)


def test_an_operators_override_succeeds_and_is_audited(webwiki, web_queue) -> None:  # noqa: F811
    seed(web_queue)
    alice, olga = client_of(webwiki, web_queue, ALICE), client_of(webwiki, web_queue, OPERATOR)
    assert decide(alice, "Q146", "prominent").status_code == 200
    # An operator with a stale page is refused like anyone (compare-and-set on what was seen).
    stale = decide(olga, "Q146", "reject", APPROVED_BY_ALICE)
    assert stale.status_code == 409 and "approved (prominent) by Alice Uploader" in stale.json["error"]
    seen = {"state": "approved", "reviewer": ALICE, "prominent": True}
    answer = decide(olga, "Q146", "reject", seen)
    assert answer.status_code == 200, answer.json
    assert answer.json["state"] == "rejected" and answer.json["overrode"] == ALICE
    assert pair_states(web_queue)[(10001, "Q146")] == ("rejected", 0)
    assert reviewers(web_queue)["Q146"] == OPERATOR
    assert overrides(web_queue) == [("approve_prominent", ALICE, None), ("reject", OPERATOR, ALICE)]
    events = reviews.audit_events(web_queue, page_id=10001)
    assert audit_record(events[-1])["overrode"] == ALICE
    assert f"by {OPERATOR} (web), override of {ALICE}'s decision" in audit_lines(events)[-2]
    # Alice's undo would take back the operator's decision: refused.
    assert decide(alice, "Q146", "undo").status_code == 409
    # The operator's undo gives the pair back to Alice, as she left it.
    undone = decide(olga, "Q146", "undo")
    assert undone.status_code == 200 and undone.json["reviewer"] == ALICE
    assert pair_states(web_queue)[(10001, "Q146")] == ("approved", 1)


def test_undo_clears_the_reviewer_and_skip_sets_none(webwiki, web_queue) -> None:  # noqa: F811
    seed(web_queue)
    alice = client_of(webwiki, web_queue, ALICE)
    assert decide(alice, "Q146", "approve").status_code == 200
    assert decide(alice, "Q144", "skip").status_code == 200
    assert reviewers(web_queue) == {"Q146": ALICE, "Q144": None}
    undone = decide(alice, "Q146", "undo")
    assert undone.status_code == 200 and undone.json["state"] == "proposed" and undone.json["reviewer"] is None
    assert reviewers(web_queue)["Q146"] is None
    assert decide(alice, "Q146", "approve", {"state": "bogus"}).status_code == 400
    assert decide(alice, "Q146", "approve", ["approved"]).status_code == 400


def test_two_reviewers_at_once_one_wins_the_other_is_told(web_queue) -> None:  # noqa: F811
    """Both saw the pair waiting; they decide at the same moment: exactly one decision is
    recorded, the other gets a conflict naming it (on every backend's locking)."""
    seed(web_queue)
    barrier = threading.Barrier(2)
    outcomes: Dict[str, Any] = {}

    def one(name: str, action: DecisionAction) -> None:
        barrier.wait()
        try:
            outcomes[name] = web_queue.record_decision(10001, "Q5", action, name, "web", seen=Seen())
        except DecisionConflict as exc:
            outcomes[name] = exc

    threads = [threading.Thread(target=one, args=(ALICE, DecisionAction.APPROVE)),
               threading.Thread(target=one, args=(BOB, DecisionAction.REJECT))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lost = [name for name, o in outcomes.items() if isinstance(o, DecisionConflict)]
    assert len(lost) == 1
    winner = BOB if lost == [ALICE] else ALICE
    conflict = outcomes[lost[0]]
    assert conflict.reviewer == winner and conflict.state == ("rejected" if winner == BOB else "approved")
    assert [r[2:4] for r in decision_rows(web_queue)] == [("reject" if winner == BOB else "approve", winner)]


def test_operator_groups_make_operators() -> None:
    web = WebSettings(operators=("Olga",), operator_groups=("sysop",))
    assert Reviewer("Olga").is_operator(web)
    assert Reviewer("Sam", groups=("autoconfirmed", "sysop")).is_operator(web)
    assert not Reviewer("Sam", groups=("sysop",), blocked=True).is_operator(web)
    assert not Reviewer("Ann", groups=("autoconfirmed",)).is_operator(web)
    assert Seen(CandidateState.APPROVED, "Ann", True).describe() == "approved (prominent) by Ann"
