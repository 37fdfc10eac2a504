"""Edit comments as Wikibase writes them and MediaWiki stores them.

Wikibase puts its own autocomment before the user's summary, and which one depends on the
module and on what the edit changed; MediaWiki then keeps 500 characters of the whole.
Read from mediawiki-extensions-Wikibase at 3ffc6928d0f455472225716263081965bc1061ac:

* ``repo/includes/SummaryFormatter.php`` — ``/* <module>-<action>:<number of summary
  arguments>|<language>|<comment arguments> */ <summary arguments, comma-separated>, <user
  summary>``; each part trimmed (``StringNormalizer::trimToNFC``: control characters become
  spaces, ``\\p{Z}`` trimmed at both ends, NFC); an empty summary argument still counts.
* ``Content/ContentHandlerEntityTitleLookup.php`` + ``lib/includes/Formatters/
  EntityIdPlainLinkFormatter.php`` — an entity of another source (Commons' items and
  properties live on Wikidata, interwiki ``d``) is ``[[d:Special:EntityPage/P180]]``; a
  local one its page: ``[[Q146]]``, ``[[Property:P180]]``. ``WikibaseRepo.ServiceWiring.php``
  (``WikibaseRepo.SummaryFormatter``) formats entity-id values the same way.
* ``repo/includes/ClaimSummaryBuilder.php`` — one statement: ``wbsetclaim-create`` /
  ``-update`` / ``-update-qualifiers|n`` / ``-update-references|n`` / ``-update-rank``
  (one aspect changed, ``Diff/ClaimDifference.php::isAtomic``), comment argument 1, summary
  argument ``[P: value]``.
* ``repo/includes/ChangeOp/ChangeOpStatement.php`` — ``wbsetclaim`` (``Api/SetClaim.php``)
  then sets the action to ``create``/``update`` and adds an empty summary argument:
  ``/* wbsetclaim-update:2||1 */`` (a rank change through ``wbsetclaim`` says "update").
* ``ChangeOpMainSnak.php`` — ``wbcreateclaim-create:1|``, ``wbsetclaimvalue:1|``;
  ``ChangeOpRemoveStatement.php`` — ``wbremoveclaims-remove:<n>|`` listing every removed
  ``P: value``.
* ``repo/includes/Api/EditSummaryHelper.php`` — ``wbeditentity`` from the diff of the base
  and the new entity: statements only, one changed → as above (a removal:
  ``wbremoveclaims-remove:1|``); several of one property →
  ``wbeditentity-statements-single-property-<add|remove|update>:1||<n>`` and the property;
  of several properties → ``…-multiple-properties-<…>:0||<n>``; terms of one language →
  ``wbsetlabel-…``/``wbsetdescription-…``/``wbsetaliases-…``/``wbsetlabeldescriptionaliases``;
  of several → ``wbeditentity-update-languages(-and-other)-short:0||<langs>``;
  ``clear`` → ``wbeditentity-override:0|``; anything else ``wbeditentity-update:0|``.

WikibaseMediaInfo (92817a0e2c8814bfceb64d9c0c5875959df8e495, ``MediaInfoHooks::
onMultiContentSave``) only drops coordinates from removal comments. MediaWiki's
``CommentStore`` keeps ``COMMENT_CHARACTER_LIMIT`` = 500 characters (``Language::
truncateForVisual``: 497 and the "..." of the English ``ellipsis`` message): :func:`stored`.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

COMMENT_CHARACTER_LIMIT = 500
ELLIPSIS = '...'
# EditSummaryHelper::SHORTENED_SUMMARY_MAX_CHANGED_LANGUAGES
_MAX_LANGUAGES = 50


def stored(comment: str) -> str:
    """*comment* as ``CommentStore`` keeps it: 500 characters, or 497 and "..."."""
    if len(comment) <= COMMENT_CHARACTER_LIMIT:
        return comment
    return comment[:COMMENT_CHARACTER_LIMIT - len(ELLIPSIS)].rstrip() + ELLIPSIS


def trim_to_nfc(text: str) -> str:
    """``StringNormalizer::trimToNFC``."""
    text = ''.join(' ' if unicodedata.category(c) == 'Cc' else c for c in text)
    text = re.sub(r'^[\s\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|'
                  r'[\s\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$', '', text)
    return unicodedata.normalize('NFC', text)


def link(entity_id: str, federated: bool) -> str:
    """An entity in a comment: ``[[d:Special:EntityPage/Q146]]`` from Commons (the
    entity lives on Wikidata), its own page on Wikidata."""
    if federated:
        return f'[[d:Special:EntityPage/{entity_id}]]'
    return f'[[Property:{entity_id}]]' if entity_id.startswith('P') else f'[[{entity_id}]]'


def snak_text(snak: dict[str, Any], federated: bool) -> str:
    """The plain snak formatter's text of a main snak's value."""
    kind = snak.get('snaktype')
    if kind == 'somevalue':
        return 'unknown value'
    if kind == 'novalue':
        return 'no value'
    value = (snak.get('datavalue') or {}).get('value')
    if isinstance(value, dict):
        if 'id' in value or 'numeric-id' in value:
            return link(str(value.get('id') or f'Q{value["numeric-id"]}'), federated)
        for key in ('text', 'time', 'amount'):
            if key in value:
                return str(value[key])
        return json.dumps(value, sort_keys=True)
    return str(value)


def pair(snak: dict[str, Any], federated: bool) -> str:
    """``[[…/P180]]: [[…/Q146]]``: ``SummaryFormatter::formatKeyValuePairs`` of
    ``[ property => main snak ]``."""
    return f'{link(snak["property"], federated)}: {snak_text(snak, federated)}'


@dataclass
class Auto:
    """A ``Summary`` before the user's part: message key, comment and summary arguments."""

    key: str
    comment_args: list[str] = field(default_factory=list)
    summary_args: list[str] = field(default_factory=list)
    language: str = ''

    def comment(self, user_summary: str) -> str:
        """``SummaryFormatter::formatSummary`` with *user_summary*, as stored."""
        head = trim_to_nfc('|'.join([self.key + ':' + str(len(self.summary_args)),
                                     self.language, *self.comment_args]))
        auto = trim_to_nfc(', '.join(a for a in self.summary_args if a))
        user = trim_to_nfc(user_summary)
        text = f'/* {head} */ ' + ', '.join(p for p in (auto, user) if p)
        return stored(text.rstrip())


def set_claim(statement: dict[str, Any], created: bool, federated: bool) -> Auto:
    """``wbsetclaim`` (ClaimSummaryBuilder, then ChangeOpStatement's action)."""
    return Auto(f'wbsetclaim-{"create" if created else "update"}', ['1'],
                [pair(statement['mainsnak'], federated), ''])


def create_claim(snak: dict[str, Any], federated: bool) -> Auto:
    """``wbcreateclaim`` (ChangeOpMainSnak::addStatement)."""
    return Auto('wbcreateclaim-create', [], [pair(snak, federated)])


def set_claim_value(snak: dict[str, Any], federated: bool) -> Auto:
    """``wbsetclaimvalue`` (ChangeOpMainSnak::setStatement: no action)."""
    return Auto('wbsetclaimvalue', [], [pair(snak, federated)])


def remove_claims(snaks: list[dict[str, Any]], federated: bool) -> Auto:
    """``wbremoveclaims``: one ``P: value`` per removed statement."""
    return Auto('wbremoveclaims-remove', [], [pair(s, federated) for s in snaks])


def _statements(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    groups = data.get('statements') if data.get('type') == 'mediainfo' else data.get('claims')
    if not isinstance(groups, dict):
        return {}
    return {s['id']: s for group in groups.values() for s in group if isinstance(s, dict)}


def _bare(value: Any) -> Any:
    """*value* without the ``hash`` keys (the same snak, whatever its stored hash)."""
    if isinstance(value, dict):
        return {k: _bare(v) for k, v in value.items() if k != 'hash'}
    if isinstance(value, list):
        return [_bare(v) for v in value]
    return value


def _list_changes(old: list[Any], new: list[Any]) -> int:
    """Added plus removed entries (``OrderedListDiffer`` counts, by value)."""
    old_keys = [json.dumps(_bare(x), sort_keys=True) for x in old]
    new_keys = [json.dumps(_bare(x), sort_keys=True) for x in new]
    return sum(1 for k in new_keys if k not in old_keys) + sum(1 for k in old_keys if k not in new_keys)


def _snaks(groups: Any) -> list[Any]:
    return [s for group in (groups or {}).values() for s in group] if isinstance(groups, dict) else []


def _claim_summary(old: dict[str, Any] | None, new: dict[str, Any], federated: bool) -> Auto:
    """ClaimSummaryBuilder::buildClaimSummary."""
    auto = Auto('wbsetclaim-create', ['1'], [pair(new['mainsnak'], federated)])
    if old is None:
        return auto
    main = _bare(old['mainsnak']) != _bare(new['mainsnak'])
    qualifiers = _list_changes(_snaks(old.get('qualifiers')), _snaks(new.get('qualifiers')))
    references = _list_changes(old.get('references') or [], new.get('references') or [])
    rank = old.get('rank', 'normal') != new.get('rank', 'normal')
    if sum((main, bool(qualifiers), bool(references), rank)) != 1 or main:
        auto.key = 'wbsetclaim-update'
    elif qualifiers:
        auto.key, auto.comment_args = 'wbsetclaim-update-qualifiers', ['1', str(qualifiers)]
    elif references:
        auto.key, auto.comment_args = 'wbsetclaim-update-references', ['1', str(references)]
    else:
        auto.key = 'wbsetclaim-update-rank'
    return auto


def _term_ops(old: Any, new: Any) -> dict[str, str]:
    """language → add / remove / set between two term maps."""
    def value(terms: Any, lang: str) -> Any:
        entry = (terms or {}).get(lang) if isinstance(terms, dict) else None
        return entry.get('value') if isinstance(entry, dict) else None
    ops = {}
    for lang in sorted(set(old or {}) | set(new or {})):
        before, after = value(old, lang), value(new, lang)
        if before != after:
            ops[lang] = 'add' if before is None else 'remove' if after is None else 'set'
    return ops


def _alias_ops(old: Any, new: Any) -> dict[str, tuple[list[str], list[str]]]:
    """language → (added, removed) aliases."""
    def values(groups: Any, lang: str) -> list[str]:
        group = (groups or {}).get(lang) if isinstance(groups, dict) else None
        return [str(a.get('value')) for a in group or [] if isinstance(a, dict)]
    ops = {}
    for lang in sorted(set(old or {}) | set(new or {})):
        before, after = values(old, lang), values(new, lang)
        added, removed = [a for a in after if a not in before], [a for a in before if a not in after]
        if added or removed:
            ops[lang] = (added, removed)
    return ops


def edit_entity(base: dict[str, Any], new: dict[str, Any], *, clear: bool = False) -> Auto:
    """``wbeditentity``'s autocomment: EditSummaryHelper::getEditSummary for the diff of
    the entity at ``baserevid`` (*base*) and the entity built on it (*new*)."""
    if clear:
        return Auto('wbeditentity-override')
    federated = new.get('type') == 'mediainfo'
    old_st, new_st = _statements(base), _statements(new)
    claim_ops: list[tuple[str, Any, Any]] = []   # (kind, old, new)
    for guid in [*old_st, *[g for g in new_st if g not in old_st]]:
        before, after = old_st.get(guid), new_st.get(guid)
        if before is None:
            claim_ops.append(('add', None, after))
        elif after is None:
            claim_ops.append(('remove', before, None))
        elif _bare(before) != _bare(after):
            claim_ops.append(('update', before, after))
    labels = _term_ops(base.get('labels'), new.get('labels'))
    descriptions = _term_ops(base.get('descriptions'), new.get('descriptions'))
    aliases = _alias_ops(base.get('aliases'), new.get('aliases'))
    term_count = len(labels) + len(descriptions) + sum(len(a) + len(r) for a, r in aliases.values())
    if term_count == 0 and claim_ops:
        return _claims_summary(claim_ops, federated)
    if term_count == 0:
        return Auto('wbeditentity-update')
    languages = sorted(set(labels) | set(descriptions) | set(aliases))
    if len(languages) == 1 and not claim_ops:
        return _language_summary(languages[0], labels, descriptions, aliases, base, new)
    other = '-and-other' if claim_ops else ''
    if len(languages) <= _MAX_LANGUAGES:
        return Auto(f'wbeditentity-update-languages{other}-short', [', '.join(languages)])
    return Auto(f'wbeditentity-update-languages{other}', [str(len(languages))])


def _claims_summary(ops: list[tuple[str, Any, Any]], federated: bool) -> Auto:
    """EditSummaryHelper::getEditSummaryForClaims."""
    if len(ops) == 1:
        kind, before, after = ops[0]
        if kind == 'remove':
            return remove_claims([before['mainsnak']], federated)
        return _claim_summary(before, after, federated)
    kinds = {kind for kind, _, _ in ops}
    sub = kinds.pop() if len(kinds) == 1 and kinds <= {'add', 'remove'} else 'update'
    per_property: dict[str, int] = {}
    for _, before, after in ops:
        pid = (after or before)['mainsnak']['property']
        per_property[pid] = per_property.get(pid, 0) + 1
    if len(per_property) == 1:
        ((pid, count),) = per_property.items()
        return Auto(f'wbeditentity-statements-single-property-{sub}', [str(count)],
                    [link(pid, federated)])
    return Auto(f'wbeditentity-statements-multiple-properties-{sub}', [str(len(per_property))])


def _language_summary(lang: str, labels: dict[str, str], descriptions: dict[str, str],
                      aliases: dict[str, tuple[list[str], list[str]]], base: dict[str, Any],
                      new: dict[str, Any]) -> Auto:
    """EditSummaryHelper::getEditSummaryForLanguage (one language, terms only)."""
    def term(key: str, entity: dict[str, Any] = new) -> str:
        terms = entity.get(key)
        entry = terms.get(lang) if isinstance(terms, dict) else None
        return entry.get('value', '') if isinstance(entry, dict) else ''
    if lang in aliases and lang not in labels and lang not in descriptions:
        added, removed = aliases[lang]
        if not removed:
            return Auto('wbsetaliases-add', [], added, lang)
        if not added:
            return Auto('wbsetaliases-remove', [], removed, lang)
        now = [a.get('value', '') for a in (new.get('aliases') or {}).get(lang, [])]
        return Auto('wbsetaliases-update', [], [', '.join(now)], lang)
    if lang not in aliases and (lang in labels) != (lang in descriptions):
        module, op = ('wbsetlabel', labels[lang]) if lang in labels else \
            ('wbsetdescription', descriptions[lang])
        key = 'labels' if module == 'wbsetlabel' else 'descriptions'
        # A removal names the removed text (the diff's old value).
        return Auto(f'{module}-{op}', [], [term(key, base if op == 'remove' else new)], lang)
    now = [a.get('value', '') for a in (new.get('aliases') or {}).get(lang, [])]
    return Auto('wbsetlabeldescriptionaliases', [], [term('labels'), term('descriptions'),
                                                      ', '.join(now)], lang)
