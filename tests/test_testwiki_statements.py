"""The test wiki addresses and removes statements as Wikibase does, and keeps merged items
as redirects the way Wikibase answers them.

Statements (``tests/testwiki/claims.py``, ``api_write.py``, after Wikibase's
``StatementGuidParser``, ``StatementGuidValidator``, ``ChangeOpStatement``,
``ChangeOpRemoveStatement``, ``RemoveClaims``): removing an id that is not there fails the
whole ``wbeditentity``; ``wbremoveclaims`` answers ``invalid-guid`` for an unknown GUID; GUIDs
are ``<entity>$<8-4-4-4-12>`` of letters or digits in either case, looked up exactly; a GUID
of another entity is ``modification-failed``; an id sent again replaces its statement.

Items that moved (``tests/testwiki/redirects.py``, after ``GetEntities`` and
``ResultBuilder``): a merged item is answered under the asked id with ``redirects`` and the
target's entity; the one Wikidata client sees it as a redirect (``ItemInfo.resolved``).

Over real HTTP (a logged-in session, formatversion 2), a fresh wiki per test.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, List

import pytest

from tests.test_testwiki_baserevid import MALLARD, OTHER, Api, add_depicts, depicts, edit_as_other, latest
from tests.testwiki.redirects import merge_item
from tests.writer_support import depicts_on_wiki, targets, wiki  # noqa: F401 - fixture
from wikivel_bot.wikidata.client import WikidataClient

MID = f"M{MALLARD}"
DUPLICATE = "Q990901"


def add_duplicate(wiki: Any) -> None:
    """A duplicate of Q25348 (mallard), made up for the merge tests, with a sitelink the
    mallard does not have."""
    wiki.store.add_entity({
        "type": "item", "id": DUPLICATE, "labels": {"en": {"language": "en", "value": "mallard duck"}},
        "descriptions": {}, "aliases": {}, "claims": {},
        "sitelinks": {"svwiki": {"site": "svwiki", "title": "Gräsand", "badges": []}}})


def mallard_guid(wiki: Any) -> str:
    (statement,) = depicts_on_wiki(wiki, MALLARD)
    return str(statement["id"])


def edit(api: Api, wiki: Any, claims: List[Dict[str, Any]]) -> Dict[str, Any]:
    return api.post(action="wbeditentity", id=MID, baserevid=latest(wiki, MALLARD),
                    data=json.dumps({"claims": claims}))


# -- removing ------------------------------------------------------------------------------

def test_removing_an_id_that_is_not_there_fails_the_whole_edit(wiki) -> None:
    api = Api(wiki)
    before = latest(wiki, MALLARD)
    answer = edit(api, wiki, [depicts("Q146"), {"id": f"{MID}${uuid.uuid4()}", "remove": ""}])
    assert answer["error"]["code"] == "modification-failed", answer
    assert "does not have statement with GUID" in answer["error"]["info"]
    # Nothing of the request was saved: not the removal, not the statement beside it.
    assert latest(wiki, MALLARD) == before and targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348"]


def test_removing_without_an_id_is_an_invalid_claim(wiki) -> None:
    assert edit(Api(wiki), wiki, [{"remove": ""}])["error"]["code"] == "invalid-claim"


def test_wbremoveclaims_answers_invalid_guid_for_an_unknown_statement(wiki) -> None:
    api = Api(wiki)
    unknown = f"{MID}${uuid.uuid4()}"
    answer = api.post(action="wbremoveclaims", claim=unknown, baserevid=latest(wiki, MALLARD))
    assert answer["error"]["code"] == "invalid-guid", answer
    assert answer["error"]["info"] == f"Statement(s) with GUID(s) {unknown} not found"
    # One unknown among known ones: nothing is removed.
    both = f"{mallard_guid(wiki)}|{unknown}"
    assert api.post(action="wbremoveclaims", claim=both)["error"]["code"] == "invalid-guid"
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348"]


@pytest.mark.parametrize("claim", [
    "M10005",                                               # no "$"
    "M10005$abc",                                           # not 8-4-4-4-12
    "X1$5b5b5b5b-1111-2222-3333-444444444444",              # no entity id on the left
    "M10005$5b5b5b5b-1111-2222-3333-444444444444$x",        # two "$"
])
def test_wbremoveclaims_answers_invalid_guid_for_a_malformed_one(wiki, claim) -> None:
    answer = Api(wiki).post(action="wbremoveclaims", claim=claim)
    assert answer["error"]["code"] == "invalid-guid", answer


def test_wbremoveclaims_of_two_entities_is_invalid_guid(wiki) -> None:
    answer = Api(wiki).post(action="wbremoveclaims",
                            claim=f"{mallard_guid(wiki)}|M10001${uuid.uuid4()}")
    assert answer["error"] == {**answer["error"], "code": "invalid-guid",
                               "info": "All claims must belong to the same entity"}


# -- addressing ----------------------------------------------------------------------------

def test_a_guid_of_letters_in_either_case_is_accepted(wiki) -> None:
    api = Api(wiki)
    guid = f"{MID}$WIKIVELZ-abcd-EFGH-ijkl-MNOPQRSTUVWX"  # letters beyond hex, both cases
    assert edit(api, wiki, [depicts("Q146", guid)])["success"] == 1
    assert [s["id"] for s in depicts_on_wiki(wiki, MALLARD)][-1] == guid


def test_a_guid_is_looked_up_exactly(wiki) -> None:
    api = Api(wiki)
    guid = mallard_guid(wiki)
    entity, rest = guid.split("$")
    assert rest.swapcase() != rest
    for other_spelling in (f"{entity}${rest.swapcase()}", f"{entity.lower()}${rest}"):
        answer = api.post(action="wbremoveclaims", claim=other_spelling)
        assert answer["error"]["code"] == "invalid-guid", (other_spelling, answer)
    # In wbeditentity another spelling is another statement: a second one is added.
    assert edit(api, wiki, [depicts("Q25348", f"{entity}${rest.swapcase()}")])["success"] == 1
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q25348"]


def test_a_guid_of_another_entity_is_modification_failed(wiki) -> None:
    api = Api(wiki)
    answer = edit(api, wiki, [depicts("Q146", f"M10001${uuid.uuid4()}")])
    assert answer["error"]["code"] == "modification-failed", answer
    assert answer["error"]["info"] == "Statement GUID invalid for given entity"
    claim = json.dumps({**depicts("Q146", f"M10001${uuid.uuid4()}")})
    # wbsetclaim edits the entity the GUID names; a malformed right part fails there too.
    bad = json.dumps({**depicts("Q146", f"{MID}$not-a-guid")})
    assert api.post(action="wbsetclaim", claim=bad)["error"]["code"] == "modification-failed"
    assert api.post(action="wbsetclaim", claim=json.dumps(depicts("Q146", "nonsense")))["error"][
        "code"] == "invalid-claim"
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348"]
    assert api.post(action="wbsetclaim", claim=claim)["success"] == 1  # lands on M10001
    assert targets(depicts_on_wiki(wiki, 10001)) == ["Q146", "Q146"]


def test_an_id_sent_again_replaces_its_statement(wiki) -> None:
    """What protects a retry from adding twice is not the wiki refusing a known id: with a
    fresh ``baserevid`` the same id simply replaces the statement (``ChangeOpStatement``)."""
    api = Api(wiki)
    guid = f"{MID}${uuid.uuid4()}"
    assert edit(api, wiki, [depicts("Q146", guid)])["success"] == 1
    again = {**depicts("Q144", guid), "rank": "preferred"}
    answer = edit(api, wiki, [again])
    assert answer["success"] == 1, answer
    statements = depicts_on_wiki(wiki, MALLARD)
    assert targets(statements) == ["Q25348", "Q144"]  # replaced in its place, not added
    assert statements[1]["id"] == guid and statements[1]["rank"] == "preferred"


def test_an_id_sent_again_on_a_stale_base_is_an_edit_conflict(wiki) -> None:
    """The stale ``baserevid`` is what refuses the second: the patch of "add this id" onto a
    revision that has it already does not apply (``MediaWikiEditEntity::fixEditConflict``)."""
    api = Api(wiki)
    guid = f"{MID}${uuid.uuid4()}"
    base = latest(wiki, MALLARD)
    first = api.post(action="wbeditentity", id=MID, baserevid=base,
                     data=json.dumps({"claims": [depicts("Q146", guid)]}))
    assert first["success"] == 1
    edit_as_other(wiki, MALLARD, add_depicts("Q144"))
    second = api.post(action="wbeditentity", id=MID, baserevid=base,
                      data=json.dumps({"claims": [depicts("Q146", guid)]}))
    assert second["error"]["code"] == "editconflict", second
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q146", "Q144"]
    assert wiki.store.entity_page(MID).latest.user == OTHER


# -- items that moved ----------------------------------------------------------------------

def test_a_merged_item_is_answered_under_the_asked_id_with_its_target(wiki) -> None:
    add_duplicate(wiki)
    merge_item(wiki.store, DUPLICATE, "Q25348")
    api = Api(wiki)
    answer = api.get(action="wbgetentities", ids=f"{DUPLICATE}|Q146", props="info|labels|sitelinks",
                     languages="en")
    entity = answer["entities"][DUPLICATE]
    assert entity["redirects"] == {"from": DUPLICATE, "to": "Q25348"}
    assert entity["id"] == "Q25348" and entity["labels"]["en"]["value"] == "mallard"
    assert list(entity)[:6] == ["pageid", "ns", "title", "lastrevid", "modified", "redirects"]
    # The merge moved the sitelinks: a look-up by the old sitelink finds the target.
    assert entity["sitelinks"]["svwiki"]["title"] == "Gräsand"
    by_link = api.get(action="wbgetentities", sites="svwiki", titles="Gräsand", props="info")
    assert [e["id"] for e in by_link["entities"].values()] == ["Q25348"]
    assert "redirects" not in answer["entities"]["Q146"]


def test_a_merge_with_conflicting_sitelinks_is_refused(wiki) -> None:
    with pytest.raises(ValueError, match="conflicting sitelinks"):
        merge_item(wiki.store, "Q3736439", "Q25348")  # duck, mallard: both on enwiki


def test_redirects_no_answers_a_merged_item_as_missing(wiki) -> None:
    add_duplicate(wiki)
    merge_item(wiki.store, DUPLICATE, "Q25348")
    answer = Api(wiki).get(action="wbgetentities", ids=DUPLICATE, redirects="no")
    assert answer["entities"][DUPLICATE] == {"id": DUPLICATE, "missing": True}


def test_the_wikidata_client_sees_a_merged_item_as_a_redirect(wiki) -> None:
    add_duplicate(wiki)
    merge_item(wiki.store, DUPLICATE, "Q25348")
    client = WikidataClient(wiki.api_url, contact="User:Tester")
    info = client.get([DUPLICATE, "Q146"])
    assert info[DUPLICATE].qid == DUPLICATE and info[DUPLICATE].resolved == "Q25348"
    assert info[DUPLICATE].label == "mallard"
    assert info["Q146"].resolved == "Q146"
    assert client.get_entities([DUPLICATE])[DUPLICATE]["id"] == "Q25348"


def test_a_statement_of_a_merged_item_is_accepted_as_sent(wiki) -> None:
    """Wikibase's value check resolves redirects (``RedirectResolvingEntityLookup``), so the
    old id is stored as it was sent: only the bot's own look-up can hold such a pair."""
    add_duplicate(wiki)
    merge_item(wiki.store, DUPLICATE, "Q25348")
    assert edit(Api(wiki), wiki, [depicts(DUPLICATE)])["success"] == 1
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", DUPLICATE]


def test_a_missing_item_fails_the_whole_edit(wiki) -> None:
    answer = edit(Api(wiki), wiki, [depicts("Q146"), depicts("Q999999991")])
    assert answer["error"]["code"] == "modification-failed", answer
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348"]


def test_the_control_endpoint_merges_an_item(wiki) -> None:
    import requests

    add_duplicate(wiki)
    control = f"{wiki.server}/_control/merge"
    assert requests.post(control, json={"from": DUPLICATE, "into": "Q25348"}, timeout=10).json() == {
        "redirect": DUPLICATE, "to": "Q25348"}
    assert Api(wiki).get(action="wbgetentities", ids=DUPLICATE)["entities"][DUPLICATE]["id"] == "Q25348"
    refused = requests.post(control, json={"from": "Q3736439", "into": "Q25348"}, timeout=10)
    assert refused.status_code == 400 and "conflicting sitelinks" in refused.json()["error"]
