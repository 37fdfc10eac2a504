"""Wikibase's edit-conflict resolution: a change made against a stale ``baserevid``.

Real Wikibase does not refuse every edit whose ``baserevid`` is no longer the latest
revision. The API applies the request to the entity *at the base revision*
(``EntitySavingHelper::loadEntity``), then ``MediaWikiEditEntity::attemptSave`` sees
``hasEditConflict()`` and calls ``fixEditConflict()`` (repo/includes/EditEntity/
MediaWikiEditEntity.php in wikimedia/mediawiki-extensions-Wikibase, read at commit
3ffc6928d0f4): it diffs base → new, patches that diff onto the latest revision, diffs
latest → patched ("clean patch") and counts the difference as conflicts. No conflict: the
patched entity is saved (warning ``wikibase-conflict-patched``). Conflicts: an edit
conflict, unless the user made every revision since the base ("self-conflict") and the
clean patch is not empty (warning ``wikibase-self-conflict-patched``).

What can conflict follows the patchers of wmde/WikibaseDataModelServices (src/Diff,
commit c92e03cc4007):

* statements are keyed by GUID (``StatementListPatcher``): an added GUID is added unless
  the latest revision already has it; a changed GUID replaces whatever the latest revision
  holds under it (last write wins); a removed GUID is removed. So a *new statement never
  conflicts* — a request resent with the same ``baserevid`` adds its statement again —
  while a change to, or removal of, a statement removed since does;
* labels and descriptions (``TermListPatcher``): a change or removal applies only if the
  latest text is still the base text, an addition only if the language is still empty;
* aliases (``AliasGroupListPatcher``): values are added and removed one by one.

A base revision without MediaInfo (a file that had no structured data then) is not a base
at all: ``EntityLoadingHelper::loadEntityRevision`` finds no entity in that revision of the
right page and answers "no entity" instead of ``nosuchrevid`` (T267363, Wikibase commit
5ffda7c63bb8), so ``EntitySavingHelper::loadEntity`` starts from an empty entity with base
revision 0 and the ``EDIT_NEW`` flag. No conflict check runs (``hasEditConflict`` compares
the latest revision with itself); the change is saved as is when the file still has no
MediaInfo, and when it got some since, ``WikiPageEntityStore::adjustFlagsForMCR`` refuses:
``StorageException("Can't create slot, it already exists: mediainfo")``, which
``MediaWikiEditEntity::attemptSave`` wraps as ``internalerror_info`` and
``EntitySavingHelper::handleSaveStatus`` answers as ``failed-save``. Nothing is merged,
nothing is saved (repo/includes/Api/EntityLoadingHelper.php, EntitySavingHelper.php,
EditEntity/MediaWikiEditEntity.php, Store/Sql/WikiPageEntityStore.php, read at commit
3ffc6928d0f4; WikibaseMediaInfo 92817a0e2c88 adds nothing here: its ``MediaInfoHandler``
only allows the custom id ``M<page id>`` of an existing file, ``canCreateWithCustomId``).

The test wiki keeps a strict mode (every stale ``baserevid`` is an ``editconflict``) for
tests that need a conflict on demand: ``TestWiki(strict_baserevid=True)``. It is checked
first, so the ``editconflict`` fault stays a conflict on a file without MediaInfo too.
"""
from __future__ import annotations

import copy
import json
from typing import Any

from .apibase import ApiError, Ctx, wikibase_error
from .model import Page

# (component, key, kind, old, new); kind: add | remove | change (whole values) or
# add-value | remove-value (one alias of a language present on both sides).
Op = tuple[str, str, str, Any, Any]
_TERMS = ('labels', 'descriptions')
CONFLICT_PATCHED = 'Your edit was patched into the latest version.'
SELF_CONFLICT_PATCHED = ('Your edit was patched into the latest version, overriding some '
                         'of your own intermediate changes.')


def statements_key(data: dict[str, Any]) -> str:
    """``statements`` for MediaInfo, ``claims`` for items and properties."""
    return 'statements' if data.get('type') == 'mediainfo' else 'claims'


def entity_at(page: Page, revid: int) -> tuple[bool, dict[str, Any] | None]:
    """(found, entity JSON at revision *revid* of *page*); found is False when *revid*
    is not a revision of this page. A file revision without MediaInfo gives None."""
    for rev in page.revisions:
        if rev.revid == revid:
            slot = rev.slots.get('mediainfo' if page.ns == 6 else 'main')
            return True, json.loads(slot[1]) if slot else None
    return False, None


def _as_map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}   # PHP serialises {} as []


def _terms(data: dict[str, Any], key: str) -> dict[str, str]:
    return {lang: term['value'] for lang, term in _as_map(data.get(key)).items()}


def _aliases(data: dict[str, Any]) -> dict[str, list[str]]:
    return {lang: [a['value'] for a in values]
            for lang, values in _as_map(data.get('aliases')).items()}


def _statements(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {st['id']: st for group in _as_map(data.get(statements_key(data))).values()
            for st in group}


def _map_diff(component: str, old: dict[str, Any], new: dict[str, Any]) -> list[Op]:
    ops: list[Op] = []
    for key in old:
        if key not in new:
            ops.append((component, key, 'remove', old[key], None))
        elif old[key] != new[key]:
            ops.append((component, key, 'change', old[key], new[key]))
    ops += [(component, key, 'add', None, new[key]) for key in new if key not in old]
    return ops


def diff(old: dict[str, Any], new: dict[str, Any]) -> list[Op]:
    """Every operation turning entity *old* into *new* (``EntityDiff``, counted flat)."""
    ops: list[Op] = []
    for key in _TERMS:
        ops += _map_diff(key, _terms(old, key), _terms(new, key))
    old_aliases, new_aliases = _aliases(old), _aliases(new)
    for op in _map_diff('aliases', old_aliases, new_aliases):
        if op[2] != 'change':
            ops.append(op)
            continue
        # a language on both sides is diffed value by value (MapDiffer(true) → ListDiffer)
        ops += [('aliases', op[1], 'remove-value', v, None) for v in op[3] if v not in op[4]]
        ops += [('aliases', op[1], 'add-value', None, v) for v in op[4] if v not in op[3]]
    ops += _map_diff('statements', _statements(old), _statements(new))
    return ops


def _patch_term(data: dict[str, Any], op: Op) -> None:
    component, lang, kind, old, new = op
    terms = data[component] = _as_map(data.get(component))
    current = terms[lang]['value'] if lang in terms else None
    if kind == 'add' and current is None or kind == 'change' and current == old:
        terms[lang] = {'language': lang, 'value': new}
    elif kind == 'remove' and current == old:
        del terms[lang]


def _patch_aliases(data: dict[str, Any], lang: str, ops: list[Op]) -> None:
    groups = data['aliases'] = _as_map(data.get('aliases'))
    current = [a['value'] for a in groups.get(lang, [])]
    has_lang = lang in groups
    kinds = {op[2] for op in ops}
    values: list[str] | None = None
    if kinds == {'add'}:            # a language new on both sides keeps the latest's
        values = None if has_lang else list(ops[0][4])
    elif kinds == {'remove'}:       # only if nobody changed that language's aliases since
        values = [] if has_lang and current == ops[0][3] else None
    elif has_lang or 'remove-value' not in kinds:
        values = list(current)
        for _, _, kind, old, new in ops:
            if kind == 'add-value':
                values.append(new)
            elif old in values:
                values.remove(old)
    if values is None:
        return
    unique = list(dict.fromkeys(values))   # an AliasGroup holds each alias once
    if unique:
        groups[lang] = [{'language': lang, 'value': v} for v in unique]
    else:
        groups.pop(lang, None)


def _patch_statement(data: dict[str, Any], op: Op) -> None:
    key = statements_key(data)
    groups = data[key] = _as_map(data.get(key))
    _, guid, kind, _, new = op
    where = next(((pid, i) for pid, group in groups.items()
                  for i, st in enumerate(group) if st['id'] == guid), None)
    if kind == 'add' and where is None:
        groups.setdefault(new['mainsnak']['property'], []).append(copy.deepcopy(new))
    elif kind == 'change' and where is not None:
        groups[where[0]][where[1]] = copy.deepcopy(new)
    elif kind == 'remove' and where is not None:
        groups[where[0]].pop(where[1])
        if not groups[where[0]]:
            del groups[where[0]]


def patch(latest: dict[str, Any], ops: list[Op]) -> dict[str, Any]:
    """A copy of *latest* with *ops* applied where they still apply (``EntityPatcher``)."""
    out = copy.deepcopy(latest)
    aliases: dict[str, list[Op]] = {}
    for op in ops:
        if op[0] in _TERMS:
            _patch_term(out, op)
        elif op[0] == 'aliases':
            aliases.setdefault(op[1], []).append(op)
        else:
            _patch_statement(out, op)
    for lang, lang_ops in aliases.items():
        _patch_aliases(out, lang, lang_ops)
    return out


def fix_edit_conflict(base: dict[str, Any], new: dict[str, Any], latest: dict[str, Any],
                      *, user_was_last_to_edit: bool) -> tuple[dict[str, Any], str] | None:
    """(entity to save, warning text) for a change *base* → *new* landing on *latest*,
    or None for an edit conflict — ``MediaWikiEditEntity::fixEditConflict``."""
    ops = diff(base, new)
    if not ops:
        return copy.deepcopy(latest), ''
    patched = patch(latest, ops)
    clean = diff(latest, patched)
    if len(ops) == len(clean):
        return patched, CONFLICT_PATCHED
    if user_was_last_to_edit and clean:
        return patched, SELF_CONFLICT_PATCHED
    return None


def stale_base(ctx: Ctx, page: Page) -> int | None:
    """The request's ``baserevid`` if it is not the latest revision (0 and none
    mean the latest, as in Wikibase), else None."""
    if ctx.get('baserevid') in (None, ''):
        return None
    base_id = ctx.integer('baserevid', 0)
    return None if base_id in (0, page.latest.revid) else base_id


def conflict() -> ApiError:
    """Wikibase's ``editconflict`` error."""
    return wikibase_error('editconflict', 'Edit conflict.', 'edit-conflict')


SLOT_EXISTS = "Can't create slot, it already exists: mediainfo"


def slot_exists() -> ApiError:
    """Wikibase's ``failed-save`` when a new MediaInfo meets a file that has one already
    (``WikiPageEntityStore::adjustFlagsForMCR``, wrapped as ``internalerror_info``)."""
    return wikibase_error('failed-save', f'Internal error: {SLOT_EXISTS}', 'internalerror_info',
                          [SLOT_EXISTS])


def empty_mediainfo(eid: str) -> dict[str, Any]:
    """The entity of a file that has no structured data yet."""
    return {'type': 'mediainfo', 'id': eid, 'labels': {}, 'descriptions': {},
            'statements': {}}


def base_entity(ctx: Ctx, page: Page, data: dict[str, Any]) -> dict[str, Any]:
    """The entity the request's change is made to: *data* (the latest) or the
    entity at a stale ``baserevid`` (Wikibase's ``EntitySavingHelper::loadEntity``
    loads that revision; one without MediaInfo gives an empty entity, base revision 0,
    see :func:`onto_latest`); in strict mode a stale one is an edit conflict."""
    base_id = stale_base(ctx, page)
    if base_id is None:
        return data
    if ctx.wiki.strict_baserevid or ctx.strict_base:
        raise conflict()
    found, entity = entity_at(page, base_id)
    if not found:
        raise wikibase_error('nosuchrevid', f'There is no revision with ID '
                             f'{base_id}.', 'wikibase-api-nosuchrevid')
    return entity if entity is not None else empty_mediainfo(data['id'])


def onto_latest(ctx: Ctx, page: Page, data: dict[str, Any]
                ) -> tuple[dict[str, Any], str]:
    """(entity to save, warning): *data* itself when it was made to the latest
    revision, else the change patched onto the latest revision (or raise
    ``editconflict``). Write modules run under the store lock, so the latest
    revision cannot move between :func:`base_entity` and here."""
    base_id = stale_base(ctx, page)
    if base_id is None:
        return data, ''
    base = entity_at(page, base_id)[1]
    if base is None:
        # No MediaInfo at the base: a new entity (base revision 0), no conflict check; the
        # save fails if the slot exists now (module docstring).
        if ctx.wiki.store.entity_data(page) is not None:
            raise slot_exists()
        return data, ''
    latest = ctx.wiki.store.entity_data(page) or empty_mediainfo(data['id'])
    assert ctx.user is not None
    # EntityStore::userWasLastToEdit: no revision after the base by anyone else
    only_ours = all(rev.user == ctx.user.name for rev in page.revisions
                    if rev.revid > base_id)
    fixed = fix_edit_conflict(base, data, latest, user_was_last_to_edit=only_ours)
    if fixed is None:
        raise conflict()
    return fixed
