"""The test wiki's edit comments are Wikibase's: its autocomment first, then the summary,
the whole cut at 500 characters as MediaWiki's CommentStore keeps it.

Each case is an API request over real HTTP and the comment as the API's
``prop=revisions&rvprop=comment`` returns it (what the bot's recovery, follow-ups and
``revert --batch`` read). The expected strings follow Wikibase's own code (cited in
``tests/testwiki/edit_comments.py``).
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, List

import pytest

from tests.test_testwiki_baserevid import MALLARD, Api, depicts
from tests.writer_support import wiki  # noqa: F401 - fixture used by name

P180 = "[[d:Special:EntityPage/P180]]"


def link(qid: str) -> str:
    return f"[[d:Special:EntityPage/{qid}]]"


def last_comment(api: Api, page_id: int = MALLARD) -> str:
    answer = api.get(action="query", prop="revisions", pageids=page_id, rvprop="comment", rvlimit=1)
    return answer["query"]["pages"][0]["revisions"][0]["comment"]


def statement(qid: str, rank: str = "normal") -> Dict[str, Any]:
    claim = depicts(qid, f"M{MALLARD}${uuid.uuid4()}")
    claim["rank"] = rank
    return claim


def add(api: Api, claims: List[Dict[str, Any]], summary: str) -> Dict[str, Any]:
    answer = api.post(action="wbeditentity", id=f"M{MALLARD}", data=json.dumps({"claims": claims}),
                      summary=summary)
    assert answer.get("success") == 1, answer
    return answer


def mallard_statement(wiki_: Any) -> Dict[str, Any]:
    (only,) = wiki_.entity(f"M{MALLARD}")["statements"]["P180"]
    return only


def test_several_statements_of_one_property_added(wiki) -> None:
    api = Api(wiki)
    add(api, [statement("Q146"), statement("Q144"), statement("Q3736439")], "three at once")
    assert last_comment(api) == (
        f"/* wbeditentity-statements-single-property-add:1||3 */ {P180}, three at once")


def test_one_statement_added_names_its_value(wiki) -> None:
    api = Api(wiki)
    add(api, [statement("Q146")], "one")
    assert last_comment(api) == f"/* wbsetclaim-create:1||1 */ {P180}: {link('Q146')}, one"
    answer = api.post(action="wbcreateclaim", entity=f"M{MALLARD}", property="P180", snaktype="value",
                      value=json.dumps({"entity-type": "item", "numeric-id": 144}), summary="made")
    assert answer["success"] == 1
    assert last_comment(api) == f"/* wbcreateclaim-create:1| */ {P180}: {link('Q144')}, made"
    answer = api.post(action="wbsetclaim", claim=json.dumps(statement("Q5")), summary="set")
    assert answer["success"] == 1
    assert last_comment(api) == f"/* wbsetclaim-create:2||1 */ {P180}: {link('Q5')}, set"


def test_a_rank_change(wiki) -> None:
    api = Api(wiki)
    claim = mallard_statement(wiki)
    # wbsetclaim: ChangeOpStatement makes the action "update", whatever changed.
    answer = api.post(action="wbsetclaim", claim=json.dumps({**claim, "rank": "preferred"}),
                      summary="prominent")
    assert answer["success"] == 1
    assert last_comment(api) == f"/* wbsetclaim-update:2||1 */ {P180}: {link('Q25348')}, prominent"
    # wbeditentity: ClaimSummaryBuilder's own word for it.
    add(api, [{**mallard_statement(wiki), "rank": "normal"}], "normal again")
    assert last_comment(api) == f"/* wbsetclaim-update-rank:1||1 */ {P180}: {link('Q25348')}, normal again"


def test_removals_name_every_removed_value(wiki) -> None:
    api = Api(wiki)
    add(api, [statement("Q146"), statement("Q144")], "two")
    guids = [s["id"] for s in wiki.entity(f"M{MALLARD}")["statements"]["P180"]]
    answer = api.post(action="wbremoveclaims", claim="|".join(guids[1:]), summary="gone")
    assert answer["success"] == 1, answer
    assert last_comment(api) == (f"/* wbremoveclaims-remove:2| */ {P180}: {link('Q146')}, "
                                 f"{P180}: {link('Q144')}, gone")
    add(api, [{"id": guids[0], "remove": ""}], "last one")
    assert last_comment(api) == f"/* wbremoveclaims-remove:1| */ {P180}: {link('Q25348')}, last one"


def test_several_removals_through_wbeditentity(wiki) -> None:
    api = Api(wiki)
    add(api, [statement("Q146"), statement("Q144")], "two")
    guids = [s["id"] for s in wiki.entity(f"M{MALLARD}")["statements"]["P180"]]
    add(api, [{"id": g, "remove": ""} for g in guids], "all")
    assert last_comment(api) == f"/* wbeditentity-statements-single-property-remove:1||3 */ {P180}, all"


def test_a_caption_and_a_statement_together(wiki) -> None:
    api = Api(wiki)
    answer = api.post(action="wbeditentity", id=f"M{MALLARD}", summary="caption",
                      data=json.dumps({"labels": {"en": {"language": "en", "value": "A mallard"}}}))
    assert answer["success"] == 1
    assert last_comment(api) == "/* wbsetlabel-add:1|en */ A mallard, caption"
    answer = api.post(action="wbeditentity", id=f"M{MALLARD}", summary="both", data=json.dumps(
        {"labels": {"de": {"language": "de", "value": "Stockente"}}, "claims": [statement("Q146")]}))
    assert answer["success"] == 1
    assert last_comment(api) == "/* wbeditentity-update-languages-and-other-short:0||de */ both"


@pytest.mark.parametrize("extra", [0, 1, 60])
def test_the_stored_comment_is_cut_at_500_characters(wiki, extra) -> None:
    api = Api(wiki)
    head = f"/* wbsetclaim-create:1||1 */ {P180}: {link('Q146')}, "
    summary = "s" * (500 - len(head) + extra)
    add(api, [statement("Q146")], summary)
    comment = last_comment(api)
    assert len(comment) == 500 if extra else len(comment) == 500 and comment.endswith("s")
    if extra:
        # CommentStore: 497 characters and "...": the tail of the summary is gone.
        assert comment == (head + summary)[:497] + "..."


def test_control_characters_of_a_summary_become_spaces(wiki) -> None:
    api = Api(wiki)
    add(api, [statement("Q146")], "a\tb\x07c e\u0301 ")
    assert last_comment(api).endswith(f"{link('Q146')}, a b c é")
