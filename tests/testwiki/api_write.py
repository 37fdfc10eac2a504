"""Wikibase write modules: wbsetclaim, wbcreateclaim, wbsetclaimvalue,
wbremoveclaims and wbeditentity (wikitext edits live in :mod:`api_edit`).

Every write checks POST, the CSRF token, page protection and change tags,
applies the request to the entity at ``baserevid`` and, if that revision is no
longer the latest, patches the change onto the latest revision or answers
``editconflict`` the way Wikibase does (see :mod:`.entitypatch`; the wiki's
``strict_baserevid`` switch makes every stale ``baserevid`` a conflict; a base
revision without MediaInfo is a new entity, refused with ``failed-save`` when the
file has MediaInfo now), saves a new revision and records the edit.
``wbeditentity`` answers with the entity built on the base revision, before the
patch (Wikibase's ``EditEntity::modifyEntity``): what it saved can hold more.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from . import claims as cl
from . import edit_comments as ec
from . import entitypatch as ep
from .api_wikibase import entity_json, normalize_id
from .apibase import ApiError, Ctx, wikibase_error
from .auth import check_token
from .model import Page
from .recording import RecordedEdit

_MEDIAINFO_KEYS = {'labels', 'descriptions', 'claims'}


def _preamble(ctx: Ctx, action: str) -> None:
    if ctx.method != 'POST':
        raise ApiError('mustbeposted', f'The "{action}" module requires a POST '
                       'request.')
    check_token(ctx)


def _check_protection(ctx: Ctx, page: Page) -> None:
    user = ctx.user
    for rule in page.protection:
        if rule.get('type') != 'edit':
            continue
        level = rule.get('level')
        if level == 'sysop' and (user is None or 'sysop' not in user.groups):
            raise ApiError('protectedpage', 'This page has been protected to '
                           'prevent editing or other actions.', messages=[{
                               'name': 'protectedpagetext',
                               'parameters': ['editprotected', 'edit'],
                               'html': {'*': 'This page has been protected to '
                                        'prevent editing or other actions.'}}])
        if level == 'autoconfirmed' and user is None:
            raise ApiError('protectedpage', 'This page has been protected to '
                           'prevent editing or other actions.')


def _check_tags(ctx: Ctx) -> list[str]:
    tags = ctx.multi('tags')
    for tag in tags:
        if tag not in ctx.wiki.store.change_tags:
            raise ApiError('tags-apply-not-allowed-one', f'The tag "{tag}" is '
                           'not allowed to be manually applied.')
    return tags


def _entity(ctx: Ctx, eid: str) -> tuple[Page, dict[str, Any]]:
    """Page and current data of *eid* (an empty MediaInfo for bare files)."""
    store = ctx.wiki.store
    page = store.entity_page(eid)
    if page is None:
        raise wikibase_error('no-such-entity', f'Could not find an entity with '
                             f'the ID "{eid}".', 'wikibase-api-no-such-entity',
                             [eid])
    data = store.entity_data(page)
    if data is None:
        data = {'type': 'mediainfo', 'id': eid, 'labels': {},
                'descriptions': {}, 'statements': {}}
    return page, data


def _key(data: dict[str, Any]) -> str:
    return 'statements' if data.get('type') == 'mediainfo' else 'claims'


def _summary(auto: ec.Auto, ctx: Ctx) -> str:
    """The stored comment: Wikibase's autocomment, the user's summary, cut at 500
    characters (:mod:`.edit_comments`)."""
    return auto.comment(ctx.get('summary') or '')


@dataclass
class _Saved:
    """A saved write: its revision, the entity saved, Wikibase's warning."""

    revid: int
    data: dict[str, Any]
    warning: str

    def answer(self, action: str, body: dict[str, Any] | None = None,
               **extra: Any) -> dict[str, Any]:
        """*body* (default: ``pageinfo``, ``success`` and *extra*) with the
        warning in Wikibase's shape (``warnings.<module>.messages``)."""
        if body is None:
            body = {'pageinfo': {'lastrevid': self.revid}, 'success': 1, **extra}
        if self.warning:
            name = 'wikibase-conflict-patched' if self.warning == ep.CONFLICT_PATCHED \
                else 'wikibase-self-conflict-patched'
            body['warnings'] = {action: {'messages': [{
                'name': name, 'parameters': [], 'html': {'*': self.warning}}]}}
        return body


def _save(ctx: Ctx, action: str, page: Page, data: dict[str, Any], *,
          auto: ec.Auto, claim: dict[str, Any] | None = None,
          removed: list[str] | None = None) -> _Saved:
    """Store *data* (patched onto the latest revision if its base is stale),
    record the edit."""
    store = ctx.wiki.store
    assert ctx.user is not None
    old = page.latest.revid
    tags = _check_tags(ctx)
    with store.lock:
        data, warning = ep.onto_latest(ctx, page, data)
        rev = store.set_entity(page, data, user=ctx.user.name,
                               comment=_summary(auto, ctx), tags=tags)
    ctx.wiki.recorder.add_edit(RecordedEdit(
        entity=data['id'], action=action, claim=copy.deepcopy(claim),
        summary=ctx.get('summary') or '', tags=tags, bot=ctx.flag('bot'),
        baserevid=ctx.integer('baserevid', 0) if ctx.get('baserevid') else None,
        new_revid=rev.revid, old_revid=old, user=ctx.user.name,
        title=page.title, removed=list(removed or []),
        data=json.loads(ctx.get('data') or 'null'), conflict_patched=bool(warning)))
    return _Saved(rev.revid, data, warning)


def _put_statement(ctx: Ctx, data: dict[str, Any], statement: dict[str, Any],
                   index: int | None = None) -> bool:
    """Insert or replace a statement; return True if it replaced one."""
    if data.get('type') == 'mediainfo':
        cl.strip_datatypes(statement)   # MediaInfo storage has no datatypes
    group_key = _key(data)
    statements = data.setdefault(group_key, {})
    if isinstance(statements, list):          # PHP empty-array serialisation
        statements = data[group_key] = {}
    found = cl.find_statement(statements, statement['id'])
    pid = statement['mainsnak']['property']
    if found is not None:
        old_pid, i = found
        if old_pid != pid:
            raise wikibase_error('modification-failed', 'Claim property '
                                 'cannot be changed', 'wikibase-api-claim'
                                 '-property-change')
        statements[pid][i] = statement
        return True
    group = statements.setdefault(pid, [])
    group.insert(index if index is not None else len(group), statement)
    return False


def wbsetclaim(ctx: Ctx) -> dict[str, Any]:
    """Create or replace one statement given as full JSON."""
    _preamble(ctx, 'wbsetclaim')
    ctx.require('claim')
    try:
        raw = json.loads(ctx.get('claim') or '')
    except ValueError:
        raise wikibase_error('invalid-json', 'Could not decode JSON',
                             'wikibase-api-invalid-json') from None
    guid = raw.get('id') if isinstance(raw, dict) else None
    # SetClaim::executeInternal: a GUID StatementGuidParser cannot read is invalid-claim;
    # a malformed one it can read fails in ChangeOpStatement (modification-failed).
    eid = cl.guid_entity(str(guid or ''))
    if eid is None:
        raise wikibase_error('invalid-claim', 'GUID must be set when setting a claim'
                             if not guid else f'Invalid claim guid {guid}',
                             'wikibase-api-invalid-claim', [guid])
    page, data = _entity(ctx, eid)
    _check_protection(ctx, page)
    data = ep.base_entity(ctx, page, data)
    cl.check_statement_guid(str(guid), eid)
    statement = cl.normalize_statement(ctx.wiki.store, raw, str(guid))
    index = ctx.integer('index', -1) if ctx.get('index') else None
    replaced = _put_statement(ctx, data, statement, index)
    auto = ec.set_claim(statement, not replaced, data.get('type') == 'mediainfo')
    saved = _save(ctx, 'wbsetclaim', page, data, auto=auto, claim=statement)
    return saved.answer('wbsetclaim', claim=statement)


def wbcreateclaim(ctx: Ctx) -> dict[str, Any]:
    """Add a statement from entity/property/snaktype/value."""
    _preamble(ctx, 'wbcreateclaim')
    ctx.require('entity', 'property', 'snaktype')
    eid = normalize_id(ctx.get('entity') or '')
    page, data = _entity(ctx, eid)
    _check_protection(ctx, page)
    data = ep.base_entity(ctx, page, data)
    snak: dict[str, Any] = {'snaktype': ctx.get('snaktype'),
                            'property': (ctx.get('property') or '').upper()}
    if snak['snaktype'] == 'value':
        ctx.require('value')
        try:
            value = json.loads(ctx.get('value') or '')
        except ValueError:
            raise wikibase_error('invalid-snak', 'Invalid snak data.',
                                 'wikibase-api-invalid-snak') from None
        prop_page = ctx.wiki.store.entity_page(snak['property'])
        prop = ctx.wiki.store.entity_data(prop_page) if prop_page else None
        dtype = cl._VALUE_TYPES.get(prop['datatype'], 'string') if prop else 'string'
        snak['datavalue'] = {'value': value, 'type': dtype}
    statement = cl.normalize_statement(ctx.wiki.store, {'mainsnak': snak},
                                       cl.new_guid(eid))
    _put_statement(ctx, data, statement)
    main = statement['mainsnak']
    auto = ec.create_claim(main, data.get('type') == 'mediainfo')
    saved = _save(ctx, 'wbcreateclaim', page, data, auto=auto, claim=statement)
    return saved.answer('wbcreateclaim', claim=statement)


def wbsetclaimvalue(ctx: Ctx) -> dict[str, Any]:
    """Change the main snak value of an existing statement."""
    _preamble(ctx, 'wbsetclaimvalue')
    ctx.require('claim', 'snaktype')
    guid = ctx.get('claim') or ''
    eid = cl.check_guid(guid)
    page, data = _entity(ctx, eid)
    _check_protection(ctx, page)
    data = ep.base_entity(ctx, page, data)
    found = cl.find_statement(data.get(_key(data)) or {}, guid)
    if found is None:
        raise wikibase_error('no-such-claim', 'Could not find the claim',
                             'wikibase-api-no-such-claim', [guid])
    pid, i = found
    old = data[_key(data)][pid][i]
    snak: dict[str, Any] = {'snaktype': ctx.get('snaktype'), 'property': pid}
    if snak['snaktype'] == 'value':
        snak['datavalue'] = {'value': json.loads(ctx.get('value') or 'null'),
                             'type': old['mainsnak'].get('datavalue', {})
                             .get('type', 'wikibase-entityid')}
    statement = cl.normalize_statement(ctx.wiki.store, {**old, 'mainsnak': snak},
                                       old['id'])
    data[_key(data)][pid][i] = statement
    auto = ec.set_claim_value(statement['mainsnak'], data.get('type') == 'mediainfo')
    saved = _save(ctx, 'wbsetclaimvalue', page, data, auto=auto, claim=statement)
    return saved.answer('wbsetclaimvalue', claim=statement)


def wbremoveclaims(ctx: Ctx) -> dict[str, Any]:
    """Remove statements by GUID (all on one entity).

    As ``repo/includes/Api/RemoveClaims.php`` answers: a malformed GUID, GUIDs of two
    entities, and a GUID the entity (at ``baserevid``) does not have — looked up exactly —
    are all ``invalid-guid`` (``getEntityId``, ``assertStatementListContainsGuids``: "Statement(s)
    with GUID(s) … not found"); never ``no-such-claim``."""
    _preamble(ctx, 'wbremoveclaims')
    ctx.require('claim')
    guids = ctx.multi('claim')
    entity_ids = {cl.check_guid(g) for g in guids}
    if len(entity_ids) != 1:
        raise wikibase_error('invalid-guid', 'All claims must belong to the '
                             'same entity', 'wikibase-api-invalid-guid')
    page, data = _entity(ctx, entity_ids.pop())
    _check_protection(ctx, page)
    data = ep.base_entity(ctx, page, data)
    statements = data.get(_key(data)) or {}
    missing = [g for g in guids if cl.find_statement(statements, g) is None]
    if missing:
        raise wikibase_error('invalid-guid', f'Statement(s) with GUID(s) '
                             f'{", ".join(missing)} not found',
                             'wikibase-api-invalid-guid', missing)
    removed: list[dict[str, Any]] = []   # main snaks, for the autocomment
    for guid in guids:
        found = cl.find_statement(statements, guid)
        assert found is not None
        pid, i = found
        st = statements[pid].pop(i)
        removed.append(st['mainsnak'])
        if not statements[pid]:
            del statements[pid]
    auto = ec.remove_claims(removed, data.get('type') == 'mediainfo')
    saved = _save(ctx, 'wbremoveclaims', page, data, auto=auto, removed=guids)
    return saved.answer('wbremoveclaims', claims=guids)


def _claim_change(ctx: Ctx, data: dict[str, Any], raw: Any, eid: str) -> None:
    """One entry of ``wbeditentity``'s ``claims`` applied to *data* (the entity at
    ``baserevid``), as Wikibase's ``ClaimsChangeOpDeserializer`` and its change ops do
    (WikibaseMediaInfo's ``MediaInfoChangeOpDeserializer`` uses the same one):

    * ``remove`` without ``id`` is ``invalid-claim``; with an id the entity does not have
      (exactly) the whole edit fails: ``ChangeOpRemoveStatement::apply`` throws, and
      ``ModifyEntity::applyChangeOp`` answers ``modification-failed``;
    * a statement with an ``id`` the entity has **replaces** that statement, in its place
      (``ChangeOpStatement::apply``: ``removeStatement`` then ``addStatement`` at the old
      index) — it is not refused; a malformed GUID or one of another entity is
      ``modification-failed`` (``validateStatementGuid``); a statement without ``id``
      gets a new GUID."""
    statements = data.setdefault(_key(data), {})
    if isinstance(statements, list):          # PHP empty-array serialisation
        statements = data[_key(data)] = {}
    if isinstance(raw, dict) and 'remove' in raw:
        if 'id' not in raw:
            raise wikibase_error('invalid-claim', 'Cannot remove a claim with no GUID',
                                 'wikibase-api-invalid-claim')
        found = cl.find_statement(statements, str(raw['id']))
        if found is None:
            raise wikibase_error('modification-failed', 'Entity does not have statement '
                                 f'with GUID {raw["id"]}', 'wikibase-api-modification-'
                                 'failed', [raw['id']])
        statements[found[0]].pop(found[1])
        if not statements[found[0]]:
            del statements[found[0]]
        return
    guid = (raw.get('id') if isinstance(raw, dict) else None) or cl.new_guid(eid)
    cl.check_statement_guid(str(guid), eid)
    _put_statement(ctx, data, cl.normalize_statement(ctx.wiki.store, raw, str(guid)))


def wbeditentity(ctx: Ctx) -> dict[str, Any]:
    """Apply labels/descriptions/aliases/claims changes (MediaInfo: ``claims``)."""
    _preamble(ctx, 'wbeditentity')
    ctx.require('data')
    if ctx.get('new'):
        raise ApiError('not-supported', 'Creating new entities is not supported '
                       'by this test wiki.')
    if ctx.get('site') and ctx.get('title'):
        page = ctx.wiki.store.page(ctx.get('title') or '')
        if page is None or page.ns != 6:
            raise wikibase_error('no-such-entity-link', 'No entity found '
                                 'matching site link', 'wikibase-api-no-such-'
                                 'entity-link')
        eid = f'M{page.pageid}'
    else:
        ctx.require('id')
        eid = normalize_id(ctx.get('id') or '')
    page, data = _entity(ctx, eid)
    _check_protection(ctx, page)
    data = ep.base_entity(ctx, page, data)
    try:
        change = json.loads(ctx.get('data') or '')
    except ValueError:
        raise wikibase_error('invalid-json', 'Could not decode JSON',
                             'wikibase-api-invalid-json') from None
    if not isinstance(change, dict):
        raise wikibase_error('not-recognized-array', 'Data must be an object',
                             'wikibase-api-not-recognized-array')
    if data['type'] == 'mediainfo':
        unknown = set(change) - _MEDIAINFO_KEYS - {'id', 'type'}
        if unknown:
            raise wikibase_error('not-supported', 'The requested feature is '
                                 'not supported by the given entity',
                                 'wikibase-api-not-supported', sorted(unknown))
    if ctx.flag('clear'):
        data = {'type': data['type'], 'id': data['id'],
                **({'datatype': data['datatype']} if 'datatype' in data else {})}
    before = json.dumps(data, sort_keys=True)
    for key in ('labels', 'descriptions'):
        for lang, value in (change.get(key) or {}).items():
            entry = value if isinstance(value, dict) else {'language': lang,
                                                            'value': value}
            target = data.setdefault(key, {})
            if isinstance(target, list):
                target = data[key] = {}
            if 'remove' in entry or entry.get('value') == '':
                target.pop(lang, None)
            else:
                target[lang] = {'language': lang, 'value': entry['value']}
    for lang, values in (change.get('aliases') or {}).items():
        data.setdefault('aliases', {})[lang] = [
            {'language': lang, 'value': v['value'] if isinstance(v, dict) else v}
            for v in (values if isinstance(values, list) else [values])]
    raw_claims = change.get('claims') or {}
    flat = [c for group in raw_claims.values() for c in group] \
        if isinstance(raw_claims, dict) else list(raw_claims)
    for raw in flat:
        _claim_change(ctx, data, raw, eid)
    # The answer's entity is the one built on the base revision, before any patch onto the
    # latest (EditEntity::modifyEntity writes ``entity`` before ModifyEntity::execute saves;
    # Wikibase repo/includes/Api/EditEntity.php, ModifyEntity.php at 3ffc6928d0f4): a
    # statement someone added since the base is saved but not in it.
    built = entity_json(ctx, page, copy.deepcopy(data))
    for meta in ('pageid', 'ns', 'title', 'modified'):
        built.pop(meta, None)
    if json.dumps(data, sort_keys=True) == before:
        # nothing to change: the latest revision stays, even under a stale base
        # (ResultBuilder::addRevisionIdFromStatusToResult: nochange when it is the base)
        built['lastrevid'] = page.latest.revid
        if ep.stale_base(ctx, page) is None:
            built['nochange'] = True
        return {'entity': built, 'success': 1}
    saved = _save(ctx, 'wbeditentity', page, data,
                  auto=ec.edit_entity(json.loads(before), data, clear=ctx.flag('clear')))
    built['lastrevid'] = saved.revid
    return saved.answer('wbeditentity', {'entity': built, 'success': 1})
