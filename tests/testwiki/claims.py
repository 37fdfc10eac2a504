r"""Statement validation and normalisation the way Wikibase stores them.

Wikibase checks GUIDs, ranks, snak types against the property's data type
and that referenced items exist; it adds ``hash`` to every snak, ``id`` to
entity-id values and keeps ``qualifiers-order`` / ``snaks-order``.

Statement GUIDs as Wikibase reads them (mediawiki-extensions-Wikibase at
3ffc6928d0f455472225716263081965bc1061ac): ``StatementGuidParser`` splits at the
one ``$`` and parses the left part as an entity id (``ItemId::PATTERN``
``/^Q[1-9]\d{0,9}\z/i``, upper-cased by the constructor; WikibaseMediaInfo's
``MediaInfoId::PATTERN`` ``/^M[1-9]\d{0,9}\z/i`` at
92817a0e2c8814bfceb64d9c0c5875959df8e495); ``StatementGuidValidator::validateGuid``
takes ``/^\{?[A-Z\d]{8}-[A-Z\d]{4}-[A-Z\d]{4}-[A-Z\d]{4}-[A-Z\d]{12}\}?\z/i`` for the
right part: letters or digits in either case, not only hex.  A statement is then
looked up by its GUID exactly (``StatementList::getFirstStatementWithGuid``
compares with ``===``): ``m123$…`` or an upper-cased UUID is another statement.
"""
from __future__ import annotations

import hashlib
import json
import re
import uuid
from typing import TYPE_CHECKING, Any

from .apibase import ApiError, wikibase_error

if TYPE_CHECKING:
    from .store import WikiStore

# StatementGuidParser's entity part, StatementGuidValidator::validateGuid's right part.
GUID_ENTITY_RE = re.compile(r'^[QPLM][1-9]\d{0,9}$', re.IGNORECASE)
GUID_PART_RE = re.compile(r'^\{?[A-Z\d]{8}-[A-Z\d]{4}-[A-Z\d]{4}-[A-Z\d]{4}-'
                          r'[A-Z\d]{12}\}?$', re.IGNORECASE)
RANKS = ('preferred', 'normal', 'deprecated')
_VALUE_TYPES = {
    'wikibase-item': 'wikibase-entityid', 'wikibase-property':
    'wikibase-entityid', 'commonsMedia': 'string', 'string': 'string',
    'external-id': 'string', 'url': 'string', 'time': 'time',
    'quantity': 'quantity', 'globe-coordinate': 'globecoordinate',
    'monolingualtext': 'monolingualtext', 'math': 'string',
    'tabular-data': 'string', 'geo-shape': 'string',
}
_ENTITY_PREFIX = {'item': 'Q', 'property': 'P', 'lexeme': 'L'}


def new_guid(entity_id: str) -> str:
    """A fresh statement GUID ``Q1$uuid`` / ``M123$uuid``."""
    return f'{entity_id}${uuid.uuid4()}'


def guid_entity(guid: str) -> str | None:
    """The entity id (upper-cased, as ``EntityId`` keeps it) that ``StatementGuidParser``
    reads from *guid*, or None when it cannot parse it (not exactly one ``$``, or no
    entity id on its left)."""
    parts = (guid or '').split('$')
    if len(parts) != 2 or not GUID_ENTITY_RE.match(parts[0]):
        return None
    return parts[0].upper()


def guid_valid(guid: str) -> bool:
    """``StatementGuidValidator::validate``: a parsable GUID whose right part has the
    8-4-4-4-12 shape of letters or digits (either case, optional braces)."""
    return guid_entity(guid) is not None and bool(GUID_PART_RE.match(guid.split('$')[1]))


def check_guid(guid: str) -> str:
    """Return the entity id of a valid statement GUID or raise ``invalid-guid`` (what
    ``wbremoveclaims`` and ``wbsetclaimvalue`` answer: ``RemoveClaims::getEntityId``,
    ``SetClaimValue::validateParameters``)."""
    if not guid_valid(guid):
        raise wikibase_error('invalid-guid', f'Invalid claim guid {guid}',
                             'wikibase-api-invalid-guid', [guid])
    return str(guid_entity(guid))


def check_statement_guid(guid: str, entity_id: str) -> None:
    """``ChangeOpStatement::validateStatementGuid`` for a statement set on *entity_id*
    (``wbsetclaim``, ``wbeditentity``): an unparsable or malformed GUID, or one of another
    entity, is a ``ChangeOpException``, which ``ModifyEntity::applyChangeOp`` and
    ``StatementModificationHelper::applyChangeOp`` answer as ``modification-failed``."""
    entity = guid_entity(guid)
    if entity is None:
        reason = 'Statement GUID can not be parsed'
    elif not guid_valid(guid):
        reason = 'Statement does not have a valid GUID'
    elif entity != entity_id:
        reason = 'Statement GUID invalid for given entity'
    else:
        return
    raise wikibase_error('modification-failed', reason,
                         'wikibase-api-modification-failed', [guid])


def _snak_hash(snak: dict[str, Any]) -> str:
    body = {k: v for k, v in snak.items() if k != 'hash'}
    return hashlib.sha1(json.dumps(body, sort_keys=True).encode()).hexdigest()


def normalize_snak(store: WikiStore, snak: dict[str, Any]) -> dict[str, Any]:
    """Validate one snak against its property; return the stored form."""
    if not isinstance(snak, dict) or 'property' not in snak:
        raise wikibase_error('invalid-snak', 'Invalid snak data.',
                             'wikibase-api-invalid-snak')
    pid = str(snak['property']).upper()
    snaktype = snak.get('snaktype', 'value')
    if snaktype not in ('value', 'somevalue', 'novalue'):
        raise wikibase_error('invalid-snak', 'Invalid snak data.',
                             'wikibase-api-invalid-snak')
    prop_page = store.entity_page(pid)
    prop = store.entity_data(prop_page) if prop_page else None
    if prop is None:
        raise wikibase_error('modification-failed', f'Property {pid} not found',
                             'wikibase-validator-no-such-property', [pid])
    out: dict[str, Any] = {'snaktype': snaktype, 'property': pid}
    if snaktype == 'value':
        datavalue = dict(snak.get('datavalue') or {})
        expected = _VALUE_TYPES.get(prop['datatype'], 'string')
        if datavalue.get('type') != expected:
            raise wikibase_error(
                'modification-failed', f'Bad value type {datavalue.get("type")}, '
                f'expected {expected}', 'wikibase-validator-bad-value-type',
                [datavalue.get('type'), expected])
        value = datavalue.get('value')
        if expected == 'wikibase-entityid':
            value = normalize_entity_value(store, value)
        datavalue['value'] = value
        out['datavalue'] = {'value': value, 'type': expected}
    out['datatype'] = prop['datatype']
    out['hash'] = _snak_hash(out)
    # Wikibase serialises snaks as snaktype, property, hash, datavalue, datatype
    return {k: out[k] for k in ('snaktype', 'property', 'hash', 'datavalue',
                                'datatype') if k in out}


def normalize_entity_value(store: WikiStore, value: Any) -> dict[str, Any]:
    """Complete ``{"entity-type":"item","numeric-id":146}`` and check existence."""
    if not isinstance(value, dict):
        raise wikibase_error('invalid-snak', 'Invalid snak data.',
                             'wikibase-api-invalid-snak')
    etype = value.get('entity-type', 'item')
    eid = value.get('id')
    if eid is None and 'numeric-id' in value:
        eid = f'{_ENTITY_PREFIX.get(etype, "Q")}{int(value["numeric-id"])}'
    if not eid or not re.match(r'^[QPL][1-9]\d*$', str(eid)):
        raise wikibase_error('invalid-snak', 'Invalid snak data.',
                             'wikibase-api-invalid-snak')
    if store.entity_page(eid) is None:
        raise wikibase_error('modification-failed', f'{eid} not found',
                             'wikibase-validator-no-such-entity', [eid])
    return {'entity-type': etype, 'numeric-id': int(eid[1:]), 'id': eid}


def normalize_statement(store: WikiStore, claim: dict[str, Any],
                        guid: str) -> dict[str, Any]:
    """Validate a statement; return it in stored form with *guid*."""
    if not isinstance(claim, dict) or 'mainsnak' not in claim:
        raise wikibase_error('invalid-claim', 'Failed to get claim from claim '
                             'Serialization', 'wikibase-api-invalid-claim')
    rank = claim.get('rank', 'normal')
    if rank not in RANKS:
        raise ApiError('invalid-claim', f'Unknown rank "{rank}"')
    out: dict[str, Any] = {'mainsnak': normalize_snak(store, claim['mainsnak']),
                           'type': 'statement', 'id': guid, 'rank': rank}
    qualifiers = claim.get('qualifiers') or {}
    if qualifiers:
        out['qualifiers'] = {pid: [normalize_snak(store, s) for s in snaks]
                             for pid, snaks in qualifiers.items()}
        out['qualifiers-order'] = list(out['qualifiers'])
    references = []
    for ref in claim.get('references') or []:
        snaks = {pid: [normalize_snak(store, s) for s in group]
                 for pid, group in (ref.get('snaks') or {}).items()}
        stored = {'snaks': snaks, 'snaks-order': list(snaks)}
        stored['hash'] = hashlib.sha1(json.dumps(snaks, sort_keys=True)
                                      .encode()).hexdigest()
        references.append({'hash': stored['hash'], 'snaks': snaks,
                           'snaks-order': list(snaks)})
    if references:
        out['references'] = references
    return out


def strip_datatypes(statement: dict[str, Any]) -> None:
    """Remove ``datatype`` from every snak of *statement* in place."""
    statement['mainsnak'].pop('datatype', None)
    for snaks in (statement.get('qualifiers') or {}).values():
        for snak in snaks:
            snak.pop('datatype', None)
    for ref in statement.get('references') or []:
        for snaks in ref.get('snaks', {}).values():
            for snak in snaks:
                snak.pop('datatype', None)


def find_statement(statements: dict[str, list[dict[str, Any]]], guid: str
                   ) -> tuple[str, int] | None:
    """(property, index) of the statement with exactly *guid* (Wikibase compares GUIDs
    with ``===``, case included), or None."""
    for pid, group in statements.items():
        for i, st in enumerate(group):
            if st.get('id', '') == guid:
                return pid, i
    return None


def value_label(snak: dict[str, Any]) -> str:
    """The ``[[Q146]]``-style value text Wikibase puts in autosummaries."""
    value = snak.get('datavalue', {}).get('value')
    if isinstance(value, dict) and 'id' in value:
        return f'[[{value["id"]}]]' if value['id'].startswith('Q') \
            else f'[[Property:{value["id"]}]]'
    if snak.get('snaktype') != 'value':
        return snak.get('snaktype', '')
    return str(value)
