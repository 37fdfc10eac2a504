"""Reading a file description page: the description text and the bot-exclusion templates.

Commons descriptions live in ``{{Information|description=…}}`` (or ``{{Artwork}}``,
``{{Photograph}}``, … with the same parameter), usually wrapped in one template per language
(``{{en|1=…}}``, ``{{de|…}}``) or in ``{{LangSwitch|en=…|de=…}}`` / ``{{mld|…}}``. The text is
parsed with mwparserfromhell, markup is stripped (link text kept), and one language is
chosen by the configured fallback order.

``bots_allowed`` follows the ``{{bots}}``/``{{nobots}}`` convention exactly as pywikibot's
``BasePage.botMayEdit`` reads it; pywikibot needs a page object with an API behind it,
while the fetcher already holds the wikitext of 50 pages from one request.
"""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, Optional, Sequence, Tuple

import mwparserfromhell
from mwparserfromhell.nodes import Template
from mwparserfromhell.wikicode import Wikicode

from wikivel_bot.core.evidence import template_key
from wikivel_bot.core.titles import page_name

# Templates whose ``description`` parameter is the file description on Commons.
DESCRIPTION_TEMPLATES = frozenset(
    {"information", "artwork", "photograph", "art photo", "book", "map", "musical work", "specimen"}
)
# Multilingual wrappers: {{LangSwitch|en=…|de=…}}, {{mld|en=…}} / {{Multilingual description|…}}.
LANGSWITCH_TEMPLATES = frozenset({"langswitch", "mld", "multilingual description"})
# A language template's name: a language code such as en, de, pt-br, zh-hans, be-tarask.
_LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]{2,8}){0,2}$")
# Template names that look like language codes but are not language templates.
_NOT_LANGUAGES = frozenset({"own", "self", "pd", "gfdl", "cc", "mld", "int"})
_SPACES = re.compile(r"\s+")
# Key of text that no language template wraps.
UNTAGGED = ""


def template_name(template: Template) -> str:
    """A template's name as MediaWiki compares it: trimmed, ``_`` as space, lower case
    (:func:`wikivel_bot.core.evidence.template_key`, which the identifier table uses too)."""
    return template_key(str(template.name))


def _clean(code: Wikicode) -> str:
    """Plain text: markup stripped (link text kept), footnotes dropped, whitespace collapsed."""
    code = mwparserfromhell.parse(str(code))  # a copy: the caller's tree stays as it is
    for tag in code.filter_tags(recursive=True):
        if str(tag.tag).strip().lower() == "ref":
            _remove(code, tag)
    text = code.strip_code(normalize=True, collapse=True, keep_template_params=False)
    return _SPACES.sub(" ", text).strip()


def _language_of(template: Template) -> Optional[str]:
    name = template_name(template)
    if name in _NOT_LANGUAGES or not _LANGUAGE_CODE.match(name):
        return None
    return name


def _param(template: Template, *names: str) -> Optional[Wikicode]:
    for name in names:
        if template.has(name):
            return template.get(name).value
    return None


def descriptions_by_language(wikitext: str) -> Dict[str, str]:
    """{language: text} of the file description; text outside language templates under ``""``.

    :param wikitext: the description page's wikitext.
    """
    code = mwparserfromhell.parse(wikitext)
    for template in code.filter_templates(recursive=True):
        if template_name(template) in DESCRIPTION_TEMPLATES:
            value = _param(template, "description", "Description")
            if value is not None and str(value).strip():
                return _split_languages(value)
    return {}


def _split_languages(value: Wikicode) -> Dict[str, str]:
    out: Dict[str, str] = {}
    rest = value.__class__(list(value.nodes))  # a copy we may cut language templates out of
    for template in value.filter_templates(recursive=False):
        name = template_name(template)
        if name in LANGSWITCH_TEMPLATES:
            for param in template.params:
                code = str(param.name).strip().lower()
                if _LANGUAGE_CODE.match(code):
                    out.setdefault(code, _clean(param.value))
            _remove(rest, template)
            continue
        lang = _language_of(template)
        if lang is None:
            continue
        text = _param(template, "1")
        if text is not None:
            out.setdefault(lang, _clean(text))
        _remove(rest, template)
    untagged = _clean(rest)
    if untagged:
        out[UNTAGGED] = untagged
    return {lang: text for lang, text in out.items() if text}


def _remove(code: Wikicode, node: Any) -> None:
    try:
        code.remove(node)
    except ValueError:
        pass


def pick_language(texts: Dict[str, str], languages: Sequence[str]) -> Tuple[str, str]:
    """(text, language) by fallback: the configured languages in order, then untagged text,
    then English, then the first language present; ("", "") when there is nothing.

    :param texts: from :func:`descriptions_by_language` (or MediaInfo captions).
    :param languages: ``Settings.site.languages``.
    """
    for lang in list(languages) + [UNTAGGED, "en", "mul"]:
        if texts.get(lang):
            return texts[lang], lang
    for lang, text in texts.items():
        if text:
            return text, lang
    return "", ""


def description(wikitext: str, languages: Sequence[str]) -> str:
    """The description of a file page in the best available language ("" when none)."""
    return pick_language(descriptions_by_language(wikitext), languages)[0]


def bots_allowed(wikitext: str, username: Optional[str], restricted: Iterable[str] = ()) -> bool:
    """Whether ``{{bots}}``/``{{nobots}}`` on the page let the bot ``username`` edit it.

    Same rules as pywikibot's ``botMayEdit``: ``{{nobots}}`` alone, ``{{nobots|all}}`` or
    ``{{nobots|Name}}`` deny; ``{{bots|allow=…}}`` must list ``all`` or the bot;
    ``{{bots|deny=…}}`` must not; ``allowscript``/``denyscript`` name the ``wikivel-bot``
    script. A restriction naming another bot does not apply. Unknown forms are ignored.

    :param wikitext: the page's wikitext.
    :param username: the bot's account (None when not configured: only rules for all apply).
    :param restricted: further template names that forbid bot edits on this wiki.
    """
    module = "wikivel-bot"
    blocked = {name.lower() for name in restricted}
    for template in mwparserfromhell.parse(wikitext).filter_templates(recursive=True):
        name = template_name(template)
        if name in blocked:
            return False
        if name not in ("bots", "nobots"):
            continue
        params = [str(p) for p in template.params]
        if params:
            key, sep, value = params[0].partition("=")
            if not sep:
                key, value = value, key
            key = key.strip()
            names = {n.strip() for n in value.split(",")}
        else:
            key, value, names = "", "", set()
        if name == "nobots":
            if not params or key or "all" in names or module in names or username in names:
                return False
            continue
        if not key or not value:
            continue  # {{bots}} alone, {{bots|x}}, {{bots|x=}}: invalid, ignored like pywikibot
        if key == "allow" and not ("all" in names or username in names):
            return False
        if key == "deny" and ("all" in names or username in names):
            return False
        if key == "allowscript" and not ("all" in names or module in names):
            return False
        if key == "denyscript" and ("all" in names or module in names):
            return False
    return True


def templates_used(wikitext: str) -> Tuple[str, ...]:
    """Names of the templates the page uses directly, nested ones included, each once
    (lower case, as :func:`template_name` gives them)."""
    names = (template_name(t) for t in mwparserfromhell.parse(wikitext).filter_templates(recursive=True))
    return tuple(dict.fromkeys(n for n in names if n))


def normalise_name(name: str, prefix: str = "") -> str:
    """``Category:black_cats`` / ``black cats`` → ``Black cats`` (prefix dropped, first letter up).

    :param prefix: a namespace prefix to drop, e.g. ``Category:`` or ``User:``.
    """
    return page_name(name, (prefix,))
