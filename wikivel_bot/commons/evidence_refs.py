"""Reading evidence references from a file description page (wikitext, mwparserfromhell).

The fetcher already holds each file's wikitext (50 per request); this turns it into the
reference strings of :mod:`wikivel_bot.core.evidence` that travel with the
:class:`~wikivel_bot.types.MediaFile` until the resolver looks them up:

* links in the **description** (the ``description`` of ``{{Information}}``, ``{{Artwork}}`` …,
  or the page's own text when it has no such template): ``[[w:Eiffel Tower]]``,
  ``[[w:de:Eiffelturm]]``, ``[[:en:Eiffel Tower]]``, ``[[wikipedia:de:…]]``, ``{{w|Title}}``,
  ``{{w|Title|text|de}}`` → ``link:enwiki:Eiffel Tower``; ``[[d:Q243]]``, ``[[:d:Q243]]``,
  ``[[wikidata:Q243]]`` → ``item:Q243``. Links elsewhere on the page (author, source,
  permission) name photographers and institutions, not what the file shows, so they are
  not read;
* ``{{Artwork|wikidata=Q…}}``: the artwork the file reproduces → ``item:Q…``;
* identifier templates anywhere on the page, through the table of
  :class:`~wikivel_bot.core.evidence.IdentifierRule` → ``id:P359:518452:Rijksmonument``.

Categories are not repeated here: ``MediaFile.categories`` holds them already.
"""

from __future__ import annotations

import functools
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

import mwparserfromhell
from mwparserfromhell.nodes import Template, Wikilink
from mwparserfromhell.wikicode import Wikicode

from wikivel_bot.commons.wikitext import DESCRIPTION_TEMPLATES, template_name
from wikivel_bot.core.evidence import (
    DEFAULT_IDENTIFIER_RULES,
    IdentifierRule,
    ref_id,
    ref_item,
    ref_link,
    template_key,
)
from wikivel_bot.core.titles import page_name
from wikivel_bot.types import is_qid

# Interwiki prefixes that lead to Wikipedia (an optional language follows) and to Wikidata.
WIKIPEDIA_PREFIXES = frozenset({"w", "wikipedia"})
WIKIDATA_PREFIXES = frozenset({"d", "wikidata"})
# ``{{w|Title|text|lang}}`` (also ``lang=``): Commons' link to a Wikipedia article.
WIKIPEDIA_LINK_TEMPLATES = frozenset({"w"})
# Templates whose ``wikidata`` parameter names the work the file reproduces.
WORK_TEMPLATES = frozenset({"artwork", "art photo", "book", "photograph"})
DEFAULT_LANGUAGE = "en"
# Wikipedias whose database name is not the code with ``_`` for ``-`` plus ``wiki``.
_DB_NAMES = {"be-tarask": "be_x_oldwiki"}


@functools.lru_cache(maxsize=1)
def wikipedia_languages() -> Tuple[FrozenSet[str], Dict[str, str]]:
    """(Wikipedia language codes, {alias: code}) from pywikibot's family file (no request):
    a prefix such as ``doi:`` or ``wikt:`` is not a Wikipedia and must not become a site
    the Wikidata API would refuse."""
    from pywikibot.family import Family

    family = Family.load("wikipedia")
    return frozenset(family.codes), {k: v for k, v in family.code_aliases.items() if v}


def site_of(language: str) -> Optional[str]:
    """``en`` → ``enwiki``; None when ``language`` is no Wikipedia's code."""
    codes, aliases = wikipedia_languages()
    code = language.strip().lower().replace("_", "-")
    code = aliases.get(code, code)
    if code not in codes:
        return None
    return _DB_NAMES.get(code, code.replace("-", "_") + "wiki")


def link_ref(target: str) -> Optional[str]:
    """The reference a link target makes, or None when it leads nowhere we resolve.

    :param target: what stands inside ``[[…]]`` before ``|``: ``w:de:Eiffelturm``,
        ``:en:Eiffel Tower``, ``d:Q243``.
    """
    text = target.split("#", 1)[0].strip().lstrip(":").strip()
    prefix, sep, rest = text.partition(":")
    prefix = prefix.strip().lower()
    if not sep:
        return None
    if prefix in WIKIDATA_PREFIXES:
        qid = page_name(rest)
        return ref_item(qid) if is_qid(qid) else None
    if prefix in WIKIPEDIA_PREFIXES:
        language, sep, title = rest.partition(":")
        site = site_of(language) if sep else None
        if site is None:
            site, title = site_of(DEFAULT_LANGUAGE), rest
    else:
        site, title = site_of(prefix), rest
    title = page_name(title)
    if site is None or not title or title.startswith(":"):
        return None
    return ref_link(site, title)


def _template_link(template: Template) -> Optional[str]:
    """``{{w|Title|text|lang}}`` / ``{{w|Title|lang=de}}`` → a link reference."""
    title = _text(template, "1")
    if not title:
        return None
    language = _text(template, "3") or _text(template, "lang") or DEFAULT_LANGUAGE
    site = site_of(language)
    return ref_link(site, page_name(title)) if site else None


def _text(template: Template, name: str) -> str:
    """A parameter's plain text ("" when absent)."""
    if not template.has(name):
        return ""
    return template.get(name).value.strip_code().strip()


def _description_parts(code: Wikicode) -> List[Wikicode]:
    """The description of the page: the description templates' parameter, or (none such)
    the page's text outside templates plus language templates' text."""
    found = []
    for template in code.filter_templates(recursive=True):
        name = template_name(template)
        if name in DESCRIPTION_TEMPLATES:
            for param in ("description", "Description"):
                if template.has(param):
                    found.append(template.get(param).value)
                    break
    if found:
        return found
    # No description template: links at the top level of the page and inside language
    # templates ({{en|…}}) still describe the file; other templates' insides do not.
    top: List[Wikicode] = [mwparserfromhell.parse("".join(
        str(node) for node in code.nodes if not isinstance(node, Template)))]
    for template in code.filter_templates(recursive=False):
        name = template_name(template)
        if name in WIKIPEDIA_LINK_TEMPLATES:
            top.append(mwparserfromhell.parse(str(template)))
        elif template.has("1") and site_of(name):  # a language template: {{de|1=…}}
            top.append(template.get("1").value)
    return top


def references(wikitext: str, rules: Sequence[IdentifierRule] = DEFAULT_IDENTIFIER_RULES) -> Tuple[str, ...]:
    """The link, item and identifier references of a description page, each once, in page
    order (description links first, then identifiers).

    :param wikitext: the file description page.
    :param rules: the identifier-template table (defaults plus ``evidence.identifier_templates``).
    """
    code = mwparserfromhell.parse(wikitext)
    refs: List[str] = []
    for part in _description_parts(code):
        for node in part.filter(recursive=True):  # page order: links and templates mixed
            if isinstance(node, Template):
                ref = _template_link(node) if template_name(node) in WIKIPEDIA_LINK_TEMPLATES else None
            elif isinstance(node, Wikilink):
                ref = link_ref(str(node.title))
            else:
                continue
            if ref:
                refs.append(ref)
    refs.extend(_work_items(code))
    refs.extend(identifier_refs(code, rules))
    return tuple(dict.fromkeys(refs))


def _work_items(code: Wikicode) -> Iterable[str]:
    for template in code.filter_templates(recursive=True):
        if template_name(template) in WORK_TEMPLATES:
            qid = page_name(_text(template, "wikidata"))
            if is_qid(qid):
                yield ref_item(qid)


def identifier_refs(code: Wikicode, rules: Sequence[IdentifierRule]) -> Iterable[str]:
    """``id:`` references of the templates in ``code`` that the table knows."""
    by_name: Dict[str, List[IdentifierRule]] = {}
    for rule in rules:
        by_name.setdefault(rule.key, []).append(rule)
    if not by_name:
        return
    for template in code.filter_templates(recursive=True):
        for rule in by_name.get(template_key(str(template.name)), ()):
            value = _text(template, rule.parameter)
            if value:
                yield ref_id(rule.property, value, rule.template)
