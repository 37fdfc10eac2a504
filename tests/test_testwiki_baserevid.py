"""The test wiki's ``baserevid`` handling: Wikibase's by default, strict on request.

Real Wikibase applies a write made against a stale ``baserevid`` to the entity at that
revision and patches the change onto the latest revision whenever it does not conflict
(``MediaWikiEditEntity::fixEditConflict``, see ``tests/testwiki/entitypatch.py``): a new
statement never conflicts; a change to a statement removed since, a label changed by both,
or a resend of the same statement GUID does. The strict mode (every stale ``baserevid`` an
``editconflict``) stays available for the tests that need a conflict on demand.

Over real HTTP, through real pywikibot where a client matters. "Another editor" changes the
wiki through its Python API: that is the rest of the world, not the client under test.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any, Callable, Dict

import pytest
import requests

from tests.testwiki import TestWiki
from tests.writer_support import (  # noqa: F401 - fixtures are used by name
    depicts_on_wiki,
    site,
    strict_baserevid,
    targets,
    wiki,
)

ROOT = Path(__file__).resolve().parents[1]
MALLARD = 10005  # File:Mallard on pond.jpg, depicts Q25348 (one statement)
MALLARD_TITLE = "File:Mallard on pond.jpg"
CHURCH = 10004  # File:Village church.png, no structured data
OTHER = "Concurrent Editor"


class Api:
    """A logged-in WikivelBot session speaking formatversion=2."""

    def __init__(self, wiki: TestWiki) -> None:
        self.wiki = wiki
        self.session = requests.Session()
        token = self.get(action="query", meta="tokens", type="login")["query"]["tokens"]["logintoken"]
        login = self.post(action="login", lgname=wiki.bot_login, lgpassword=wiki.bot_password,
                          lgtoken=token)
        assert login["login"]["result"] == "Success", login
        self.csrf = self.get(action="query", meta="tokens")["query"]["tokens"]["csrftoken"]

    def get(self, **params: Any) -> Dict[str, Any]:
        reply = self.session.get(self.wiki.api_url, params={**params, "format": "json",
                                                            "formatversion": "2"}, timeout=30)
        return reply.json()

    def post(self, **params: Any) -> Dict[str, Any]:
        data = {**params, "format": "json", "formatversion": "2"}
        if params.get("action") != "login":
            data["token"] = self.csrf
        return self.session.post(self.wiki.api_url, data=data, timeout=30).json()


def latest(wiki: TestWiki, page_id: int) -> int:
    return wiki.store.entity_page(f"M{page_id}").latest.revid


def edit_as_other(wiki: TestWiki, page_id: int, change: Callable[[Dict[str, Any]], None]) -> int:
    """Another account changes the file's MediaInfo; return the new revision id."""
    page = wiki.store.entity_page(f"M{page_id}")
    with wiki.store.lock:
        data = wiki.store.entity_data(page) or {"labels": {}, "descriptions": {}, "statements": {}}
        change(data)
        return wiki.store.set_mediainfo(page, data, user=OTHER, comment="/* wbeditentity-update:0| */").revid


def depicts(qid: str, guid: str | None = None) -> Dict[str, Any]:
    claim: Dict[str, Any] = {
        "mainsnak": {"snaktype": "value", "property": "P180", "datavalue": {
            "value": {"entity-type": "item", "numeric-id": int(qid[1:]), "id": qid},
            "type": "wikibase-entityid"}},
        "type": "statement", "rank": "normal"}
    if guid:
        claim["id"] = guid
    return claim


def add_depicts(qid: str, page_id: int = MALLARD) -> Callable[[Dict[str, Any]], None]:
    def change(data: Dict[str, Any]) -> None:
        data["statements"].setdefault("P180", []).append(depicts(qid, f"M{page_id}${uuid.uuid4()}"))
    return change


def revisions(wiki: TestWiki, page_id: int) -> int:
    return len(wiki.store.entity_page(f"M{page_id}").revisions)


# -- Wikibase's behaviour (the default) ---------------------------------------------------


@pytest.mark.parametrize("module", ["wbsetclaim", "wbeditentity"])
def test_a_new_statement_on_a_stale_base_lands_on_the_latest_revision(wiki, site, module) -> None:
    import pywikibot

    assert wiki.strict_baserevid is False  # the default is Wikibase's behaviour
    mediainfo = pywikibot.FilePage(site, MALLARD_TITLE).data_item()
    mediainfo.get()
    base = mediainfo.latest_revision_id
    theirs = edit_as_other(wiki, MALLARD, add_depicts("Q146"))

    claim = pywikibot.Claim(site, "P180")
    claim.setTarget(pywikibot.ItemPage(site, "Q3736439"))
    if module == "wbsetclaim":
        mediainfo.addClaim(claim, summary="stale base")
    else:
        mediainfo.editEntity({"claims": {"P180": [claim.toJSON()]}}, summary="stale base")

    (edit,) = wiki.edits
    assert (edit.action, edit.baserevid, edit.old_revid) == (module, base, theirs)
    assert edit.conflict_patched and edit.new_revid == latest(wiki, MALLARD)
    # both the other editor's statement and ours, on top of the latest revision
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q146", "Q3736439"]


def test_the_patched_answer_carries_wikibases_warning(wiki) -> None:
    api = Api(wiki)
    base = latest(wiki, MALLARD)
    edit_as_other(wiki, MALLARD, add_depicts("Q146"))
    answer = api.post(action="wbcreateclaim", entity=f"M{MALLARD}", property="P180",
                      snaktype="value", value=json.dumps({"entity-type": "item", "numeric-id": 144}),
                      baserevid=base)
    assert answer["success"] == 1 and answer["pageinfo"]["lastrevid"] == latest(wiki, MALLARD)
    (message,) = answer["warnings"]["wbcreateclaim"]["messages"]
    assert message["name"] == "wikibase-conflict-patched"
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q146", "Q144"]


def test_a_base_that_is_latest_is_no_conflict_and_no_warning(wiki) -> None:
    api = Api(wiki)
    answer = api.post(action="wbsetclaim", claim=json.dumps(depicts("Q146", f"M{MALLARD}${uuid.uuid4()}")),
                      baserevid=latest(wiki, MALLARD))
    assert answer["success"] == 1 and "warnings" not in answer
    assert not wiki.edits[-1].conflict_patched


def remove_first_depicts(data: Dict[str, Any]) -> None:
    data["statements"]["P180"].pop(0)
    if not data["statements"]["P180"]:
        del data["statements"]["P180"]


@pytest.mark.parametrize("change", ["rank", "target", "remove"])
def test_a_change_to_a_statement_removed_since_is_an_edit_conflict(wiki, site, change) -> None:
    import pywikibot
    from pywikibot.exceptions import APIError

    mediainfo = pywikibot.FilePage(site, MALLARD_TITLE).data_item()
    mediainfo.get()
    (claim,) = mediainfo.statements["P180"]
    edit_as_other(wiki, MALLARD, remove_first_depicts)
    before = revisions(wiki, MALLARD)

    with pytest.raises(APIError) as err:
        if change == "rank":  # wbsetclaim
            claim.changeRank("preferred")
        elif change == "target":  # wbsetclaimvalue
            claim.changeTarget(pywikibot.ItemPage(site, "Q3736439"))
        else:  # wbremoveclaims
            mediainfo.removeClaims([claim])
    assert err.value.code == "editconflict"
    assert wiki.edits == [] and revisions(wiki, MALLARD) == before
    assert depicts_on_wiki(wiki, MALLARD) == []


def test_a_statement_changed_by_both_keeps_the_later_change(wiki) -> None:
    """Not a conflict in Wikibase: statements are patched by GUID, and a changed statement
    replaces whatever the latest revision holds under its GUID (StatementListPatcher)."""
    api = Api(wiki)
    base = latest(wiki, MALLARD)
    (ours,) = depicts_on_wiki(wiki, MALLARD)

    def prefer(data: Dict[str, Any]) -> None:
        data["statements"]["P180"][0]["rank"] = "preferred"

    edit_as_other(wiki, MALLARD, prefer)
    answer = api.post(action="wbsetclaimvalue", claim=ours["id"], snaktype="value",
                      value=json.dumps({"entity-type": "item", "numeric-id": 146}), baserevid=base)
    assert answer["success"] == 1, answer
    (statement,) = depicts_on_wiki(wiki, MALLARD)
    assert targets([statement]) == ["Q146"] and statement["rank"] == "normal"


def test_a_label_changed_by_both_is_an_edit_conflict_another_language_is_not(wiki) -> None:
    api = Api(wiki)
    base = latest(wiki, MALLARD)

    def label(data: Dict[str, Any]) -> None:
        data["labels"] = {"en": {"language": "en", "value": "A mallard"}}

    edit_as_other(wiki, MALLARD, label)
    clash = api.post(action="wbeditentity", id=f"M{MALLARD}", baserevid=base,
                     data=json.dumps({"labels": {"en": {"language": "en", "value": "A duck"}}}))
    assert clash["error"]["code"] == "editconflict"
    assert clash["error"]["messages"][0]["name"] == "edit-conflict"
    fine = api.post(action="wbeditentity", id=f"M{MALLARD}", baserevid=base,
                    data=json.dumps({"labels": {"de": {"language": "de", "value": "Stockente"}}}))
    assert fine["success"] == 1, fine
    labels = wiki.entity(f"M{MALLARD}")["labels"]
    assert {lang: t["value"] for lang, t in labels.items()} == {"en": "A mallard", "de": "Stockente"}


def test_a_self_conflict_saves_the_rest_of_the_change(wiki) -> None:
    """The bot made every revision since its base: the conflicting label stays as the bot's
    intermediate edit left it and the new statement is still saved; the same request after
    another account's edit is refused."""
    api = Api(wiki)
    base = latest(wiki, MALLARD)

    def label(value: str) -> str:
        return json.dumps({"labels": {"en": {"language": "en", "value": value}}})

    assert api.post(action="wbeditentity", id=f"M{MALLARD}", data=label("A mallard"))["success"] == 1
    change = dict(action="wbeditentity", id=f"M{MALLARD}", baserevid=base,
                  data=json.dumps({**json.loads(label("A duck")), "claims": [depicts("Q144")]}))
    answer = api.post(**change)
    assert answer["warnings"]["wbeditentity"]["messages"][0]["name"] == "wikibase-self-conflict-patched"
    assert wiki.entity(f"M{MALLARD}")["labels"]["en"]["value"] == "A mallard"
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q144"]

    edit_as_other(wiki, MALLARD, add_depicts("Q146"))
    assert api.post(**change)["error"]["code"] == "editconflict"
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q144", "Q146"]


def test_a_file_without_structured_data_at_its_base_that_got_some_since_fails_to_save(wiki) -> None:
    """The base revision has no MediaInfo: Wikibase starts from an empty entity with base
    revision 0, runs no conflict check, and the save fails because the slot exists now."""
    api = Api(wiki)
    base = latest(wiki, CHURCH)
    assert wiki.entity(f"M{CHURCH}") is None
    edit_as_other(wiki, CHURCH, add_depicts("Q146", CHURCH))
    answer = api.post(action="wbeditentity", id=f"M{CHURCH}", baserevid=base,
                      data=json.dumps({"claims": [depicts("Q144")]}))
    assert answer["error"]["code"] == "failed-save", answer
    assert "Can't create slot, it already exists: mediainfo" in answer["error"]["info"]
    assert [m["name"] for m in answer["error"]["messages"]] == ["internalerror_info"]
    assert targets(depicts_on_wiki(wiki, CHURCH)) == ["Q146"]  # nothing merged, nothing saved
    assert wiki.edits == []


@pytest.mark.parametrize("module", ["wbcreateclaim", "wbsetclaim"])
def test_every_statement_module_meets_the_slot_that_exists_now(wiki, module) -> None:
    api = Api(wiki)
    base = latest(wiki, CHURCH)
    edit_as_other(wiki, CHURCH, add_depicts("Q146", CHURCH))
    if module == "wbcreateclaim":
        answer = api.post(action=module, entity=f"M{CHURCH}", property="P180", snaktype="value",
                          value=json.dumps({"entity-type": "item", "numeric-id": 144}), baserevid=base)
    else:
        answer = api.post(action=module, claim=json.dumps(depicts("Q144", f"M{CHURCH}${uuid.uuid4()}")),
                          baserevid=base)
    assert answer["error"]["code"] == "failed-save", answer
    assert targets(depicts_on_wiki(wiki, CHURCH)) == ["Q146"] and wiki.edits == []


def test_a_file_still_without_structured_data_saves_the_change_as_made(wiki) -> None:
    """A later revision without MediaInfo (a wikitext edit): no conflict check, no warning."""
    api = Api(wiki)
    base = latest(wiki, CHURCH)
    page = wiki.store.entity_page(f"M{CHURCH}")
    wiki.store.add_revision(page, {}, user=OTHER, comment="wikitext edit")
    assert latest(wiki, CHURCH) != base and wiki.entity(f"M{CHURCH}") is None
    answer = api.post(action="wbeditentity", id=f"M{CHURCH}", baserevid=base,
                      data=json.dumps({"claims": [depicts("Q144")]}))
    assert answer["success"] == 1 and "warnings" not in answer, answer
    assert targets(depicts_on_wiki(wiki, CHURCH)) == ["Q144"]
    assert not wiki.edits[-1].conflict_patched


def test_the_answer_to_a_stale_base_is_the_entity_built_on_the_base(wiki) -> None:
    """What is saved is patched onto the latest revision; what is answered is not
    (EditEntity::modifyEntity puts the entity in the answer before the save patches it)."""
    api = Api(wiki)
    base = latest(wiki, MALLARD)
    edit_as_other(wiki, MALLARD, add_depicts("Q146"))
    answer = api.post(action="wbeditentity", id=f"M{MALLARD}", baserevid=base,
                      data=json.dumps({"claims": [depicts("Q144")]}))
    assert answer["success"] == 1, answer
    assert answer["entity"]["lastrevid"] == latest(wiki, MALLARD)
    assert targets(answer["entity"]["statements"]["P180"]) == ["Q25348", "Q144"]  # no Q146
    (message,) = answer["warnings"]["wbeditentity"]["messages"]
    assert message["name"] == "wikibase-conflict-patched"
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q146", "Q144"]  # as saved


def test_the_answer_to_a_latest_base_is_the_entity_as_saved(wiki) -> None:
    api = Api(wiki)
    answer = api.post(action="wbeditentity", id=f"M{MALLARD}", baserevid=latest(wiki, MALLARD),
                      data=json.dumps({"claims": [depicts("Q144")]}))
    assert "warnings" not in answer
    assert answer["entity"]["statements"] == wiki.entity(f"M{MALLARD}")["statements"]


def test_a_baserevid_of_another_page_is_no_such_revision(wiki) -> None:
    api = Api(wiki)
    answer = api.post(action="wbcreateclaim", entity=f"M{MALLARD}", property="P180",
                      snaktype="value", value=json.dumps({"entity-type": "item", "numeric-id": 146}),
                      baserevid=latest(wiki, CHURCH))
    assert answer["error"]["code"] == "nosuchrevid"
    assert wiki.edits == []


# -- the strict mode ----------------------------------------------------------------------


def test_strict_mode_refuses_every_stale_baserevid(wiki, strict_baserevid, site) -> None:
    import pywikibot
    from pywikibot.exceptions import APIError

    mediainfo = pywikibot.FilePage(site, MALLARD_TITLE).data_item()
    mediainfo.get()
    edit_as_other(wiki, MALLARD, add_depicts("Q146"))
    claim = pywikibot.Claim(site, "P180")
    claim.setTarget(pywikibot.ItemPage(site, "Q3736439"))
    with pytest.raises(APIError) as err:
        mediainfo.addClaim(claim)
    assert err.value.code == "editconflict"
    assert wiki.edits == [] and targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q146"]


def test_the_control_endpoint_switches_the_mode(wiki) -> None:
    api = Api(wiki)
    control = f"{wiki.server}/_control"
    base = latest(wiki, MALLARD)
    edit_as_other(wiki, MALLARD, add_depicts("Q146"))
    create = dict(action="wbcreateclaim", entity=f"M{MALLARD}", property="P180", snaktype="value",
                  value=json.dumps({"entity-type": "item", "numeric-id": 144}), baserevid=base)

    assert requests.post(f"{control}/baserevid", json={"strict": True}, timeout=10).json() == {"strict": True}
    assert requests.get(f"{control}/state", timeout=10).json()["strict_baserevid"] is True
    assert api.post(**create)["error"]["code"] == "editconflict"
    assert requests.post(f"{control}/baserevid", json={"strict": False}, timeout=10).json() == {"strict": False}
    assert api.post(**create)["success"] == 1
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q146", "Q144"]


@pytest.mark.parametrize("option", [[], ["--strict-baserevid"]])
def test_the_standalone_server_takes_the_mode_as_an_option(option) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "tests.testwiki", "--port", "0",
                             "--no-starter-items", *option],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        api_url = proc.stdout.readline().strip()  # type: ignore[union-attr]
        state = requests.get(api_url.replace("/w/api.php", "/_control/state"), timeout=10).json()
        assert state["strict_baserevid"] is bool(option)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0


def test_the_editconflict_fault_is_a_conflict_on_the_wikibase_like_wiki(wiki, site) -> None:
    """The fault saves a (null) revision first; Wikibase would patch a new statement onto it,
    so the fault makes its one request strict: a conflict on demand, whatever the mode."""
    import pywikibot
    from pywikibot.exceptions import APIError

    mediainfo = pywikibot.FilePage(site, MALLARD_TITLE).data_item()
    mediainfo.get()
    wiki.faults.add("wbsetclaim", "editconflict")
    claim = pywikibot.Claim(site, "P180")
    claim.setTarget(pywikibot.ItemPage(site, "Q3736439"))
    with pytest.raises(APIError) as err:
        mediainfo.addClaim(claim)
    assert err.value.code == "editconflict" and wiki.edits == []
    assert wiki.store.entity_page(f"M{MALLARD}").latest.user == OTHER


# -- the hazard: a write resent with the same baserevid ----------------------------------


def test_documents_that_a_resent_new_statement_is_added_twice(wiki) -> None:
    """Documents the WIKI's (Wikibase's) behaviour, not the bot's: the same wbcreateclaim or
    wbeditentity request sent again with the same baserevid — what pywikibot does when the
    answer to an applied edit comes back after its read timeout — adds the statement a
    second time, because a new statement never conflicts. The writer must never resend a
    write blindly. (On a file that had no structured data at the base, the resend fails
    instead: the first edit created the MediaInfo slot, see the failed-save tests above.)"""
    api = Api(wiki)
    base = latest(wiki, MALLARD)
    create = dict(action="wbcreateclaim", entity=f"M{MALLARD}", property="P180", snaktype="value",
                  value=json.dumps({"entity-type": "item", "numeric-id": 146}), baserevid=base)
    assert api.post(**create)["success"] == 1
    assert api.post(**create)["success"] == 1  # the resend
    edit = dict(action="wbeditentity", id=f"M{MALLARD}", baserevid=base, bot=1,
                data=json.dumps({"claims": {"P180": [depicts("Q144")]}}))
    assert api.post(**edit)["success"] == 1
    assert api.post(**edit)["success"] == 1  # the resend
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q146", "Q146", "Q144", "Q144"]
    assert [e.conflict_patched for e in wiki.edits] == [False, True, True, True]


def test_documents_that_a_resent_statement_guid_is_an_edit_conflict(wiki) -> None:
    """The same request with a statement GUID minted by the client (pywikibot's addClaim
    does, wbeditentity can): the resend's patch adds nothing new, the bot made every
    revision since its base, and Wikibase answers editconflict — no second statement."""
    api = Api(wiki)
    base = latest(wiki, MALLARD)
    claim = json.dumps(depicts("Q146", f"M{MALLARD}${uuid.uuid4()}"))
    assert api.post(action="wbsetclaim", claim=claim, baserevid=base)["success"] == 1
    assert api.post(action="wbsetclaim", claim=claim, baserevid=base)["error"]["code"] == "editconflict"
    edit = dict(action="wbeditentity", id=f"M{MALLARD}", baserevid=base, data=json.dumps(
        {"claims": [depicts("Q144", f"M{MALLARD}${uuid.uuid4()}")]}))
    assert api.post(**edit)["success"] == 1  # patched: its base is stale, the GUID is new
    assert api.post(**edit)["error"]["code"] == "editconflict"
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q146", "Q144"]
    # A GUID protects only against its own resend: a second writer (a frozen one woken up
    # after another took its lease over) mints its own GUID, and Wikibase adds it.
    frozen = dict(edit, data=json.dumps({"claims": [depicts("Q144", f"M{MALLARD}${uuid.uuid4()}")]}))
    assert api.post(**frozen)["success"] == 1
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q146", "Q144", "Q144"]


@pytest.fixture
def resend_after_read_timeout(monkeypatch: pytest.MonkeyPatch):
    """``resend_after_read_timeout(fault)``: pywikibot waits 0.5 s for the answer the wiki
    holds (only that one: the resend and every other request have all the time they need),
    then resends the request once at once."""
    from pywikibot import config

    from tests.late_answers import short_read_timeout_for

    monkeypatch.setattr(config, "max_retries", 1)
    monkeypatch.setattr(config, "retry_wait", 0)
    monkeypatch.setattr(config, "retry_max", 0)
    return lambda fault: short_read_timeout_for(monkeypatch, fault)


def test_documents_pywikibot_resending_a_late_edit_adds_it_twice(wiki, site, resend_after_read_timeout) -> None:
    """Documents the hazard end to end with real pywikibot: the edit is applied, its answer
    held past the read timeout; pywikibot resends the same wbeditentity with the same
    baserevid, Wikibase applies it again and answers success. Two statements, one call."""
    import pywikibot

    held = wiki.faults.add("wbeditentity", "hold_response", title=f"M{MALLARD}", seconds=120)
    resend_after_read_timeout(held)
    mediainfo = pywikibot.FilePage(site, MALLARD_TITLE).data_item()
    mediainfo.get()
    claim = pywikibot.Claim(site, "P180")
    claim.setTarget(pywikibot.ItemPage(site, "Q146"))
    mediainfo.editEntity({"claims": {"P180": [claim.toJSON()]}}, bot=True)  # "succeeds"

    assert held.fired == 1
    sent = [r for r in wiki.requests if r.action == "wbeditentity"]
    assert len(sent) == 2 and sent[0].params == sent[1].params  # the same request, resent
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q146", "Q146"]


def test_strict_mode_refuses_pywikibots_resend(wiki, strict_baserevid, site, resend_after_read_timeout) -> None:
    """What the test wiki answered before it behaved like Wikibase (and what the writer's
    lost-answer test still relies on): the resend meets a stale baserevid."""
    import pywikibot
    from pywikibot.exceptions import APIError

    resend_after_read_timeout(wiki.faults.add("wbeditentity", "hold_response", title=f"M{MALLARD}", seconds=120))
    mediainfo = pywikibot.FilePage(site, MALLARD_TITLE).data_item()
    mediainfo.get()
    claim = pywikibot.Claim(site, "P180")
    claim.setTarget(pywikibot.ItemPage(site, "Q146"))
    with pytest.raises(APIError) as err:
        mediainfo.editEntity({"claims": {"P180": [claim.toJSON()]}}, bot=True)
    assert err.value.code == "editconflict"
    assert targets(depicts_on_wiki(wiki, MALLARD)) == ["Q25348", "Q146"]


def test_aliases_are_patched_one_value_at_a_time() -> None:
    """Aliases, which no write of the bot touches, patched like AliasGroupListPatcher."""
    from tests.testwiki.entitypatch import fix_edit_conflict

    def item(*aliases: str) -> Dict[str, Any]:
        return {"type": "item", "id": "Q146", "labels": {}, "aliases": {
            "en": [{"language": "en", "value": a} for a in aliases]} if aliases else {}}

    def values(entity: Dict[str, Any]) -> list:
        return [a["value"] for a in entity["aliases"].get("en", [])]

    # theirs added "moggy", ours added "kitty": both kept
    fixed = fix_edit_conflict(item("cat"), item("cat", "kitty"), item("cat", "moggy"),
                              user_was_last_to_edit=False)
    assert fixed is not None and values(fixed[0]) == ["cat", "moggy", "kitty"]
    # both removed "cat": our removal finds nothing to remove, a conflict
    assert fix_edit_conflict(item("cat", "puss"), item("puss"), item("puss"),
                             user_was_last_to_edit=False) is None
    # a language new on both sides keeps the latest's aliases: a conflict
    assert fix_edit_conflict(item(), item("kitty"), item("moggy"), user_was_last_to_edit=False) is None
