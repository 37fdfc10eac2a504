"""One title rule: MediaWiki's first-letter capitalisation, in core/titles.py only.

MediaWiki does not capitalise a title's first letter with ``str.upper``: ``ßx`` stays
``ßx`` (not ``SSx``), ``ǆx`` becomes the titlecase ``ǅx`` (not ``Ǆx``), Georgian Mkhedruli
stays lower case. core/titles.py carries a copy of pywikibot's table of these exceptions
(core/ may import only the standard library); these tests hold the copy to pywikibot's
``first_upper``, show that every place the bot normalises a name uses it, that the local test
wiki answers as MediaWiki does, and that no other module capitalises titles by hand.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from pywikibot.tools import first_upper as pywikibot_first_upper

from tests.testwiki import TestWiki
from wikivel_bot.backfill.stages import normalise_title
from wikivel_bot.commons.item_images import ItemImageCache
from wikivel_bot.commons.wikitext import normalise_name
from wikivel_bot.core.review_rules import category_matches, normalize_name
from wikivel_bot.core.titles import FIRST_UPPER_EXCEPTIONS, check_file_title, first_upper, page_name
from wikivel_bot.train.data.categories import normalise as normalise_category
from wikivel_bot.train.data.fetch import thumb_url
from wikivel_bot.train.data.filenames import file_name

ROOT = Path(__file__).resolve().parents[1]

# (first letter as typed, first letter as MediaWiki spells the title). The four exceptions are
# those the issue names; the last two are where MediaWiki and str.upper agree.
CASES = [
    pytest.param("ß", "ß", id="sharp-s-kept"),
    pytest.param("ǆ", "ǅ", id="dz-digraph-titlecase"),
    pytest.param("ŉ", "ŉ", id="n-apostrophe-kept"),
    pytest.param("ა", "ა", id="georgian-mkhedruli-kept"),
    pytest.param("ı", "I", id="turkish-dotless-i"),
    pytest.param("7", "7", id="digit"),
]


# -- the rule ---------------------------------------------------------------------------------
def test_first_upper_agrees_with_pywikibot_for_every_code_point() -> None:
    differ = []
    for code in range(sys.maxunicode + 1):
        text = chr(code) + "x"
        if first_upper(text) != pywikibot_first_upper(text):
            differ.append(f"U+{code:04X}")
    assert not differ, f"core/titles.first_upper differs from pywikibot's for {differ[:20]}"


def test_the_table_is_not_str_upper() -> None:
    # Without these the comparison above would pass for plain str.upper too.
    unlike_upper = [c for c in FIRST_UPPER_EXCEPTIONS if FIRST_UPPER_EXCEPTIONS[c] != c.upper()]
    assert len(unlike_upper) > 700
    assert "\N{LATIN SMALL LETTER SHARP S}".upper() == "SS"
    assert first_upper("ßx") == "ßx" and first_upper("ǆx") == "ǅx" and first_upper("") == ""


@pytest.mark.parametrize("typed, expected", CASES)
def test_the_cases_match_pywikibot(typed: str, expected: str) -> None:
    assert first_upper(typed + "x") == expected + "x" == pywikibot_first_upper(typed + "x")


def test_page_name_spelling() -> None:
    assert page_name("  category:black__cats ", ("Category:",)) == "Black cats"
    assert page_name("Image:ßx_y.jpg", ("File:", "Image:")) == "ßx y.jpg"
    assert page_name("user:ǆemal", ("User:",)) == "ǅemal"
    assert page_name("Category", ("Category:",)) == "Category"   # a prefix without its colon stays
    assert page_name("Categoryx:a", ("Category:",)) == "Categoryx:a"


# -- every call site uses it ------------------------------------------------------------------
@pytest.mark.parametrize("typed, expected", CASES)
def test_file_title_check(typed: str, expected: str) -> None:
    assert check_file_title(f"file:{typed}x_y.jpg") == f"File:{expected}x y.jpg"


@pytest.mark.parametrize("typed, expected", CASES)
def test_backfill_title_list_line(typed: str, expected: str) -> None:
    assert normalise_title(f"{typed}x_y.jpg") == f"File:{expected}x y.jpg"
    assert normalise_title(f"Image:{typed}x.jpg") == f"File:{expected}x.jpg"


@pytest.mark.parametrize("typed, expected", CASES)
def test_wikitext_and_review_names(typed: str, expected: str) -> None:
    assert normalise_name(f"Category:{typed}x_cats", "Category:") == f"{expected}x cats"
    assert normalise_name(f"{typed}x", "User:") == f"{expected}x"
    assert normalize_name(f"User:{typed}x_y", "User") == f"{expected}x y"
    assert category_matches(f"{typed}x cats", [f"Category:{expected}x_cats"])


@pytest.mark.parametrize("typed, expected", CASES)
def test_train_names(typed: str, expected: str) -> None:
    assert file_name(f"File:{typed}x_y.jpg") == f"{expected}x y.jpg"
    assert normalise_category(f"Category:{typed}x_cats") == f"{expected}x cats"
    # The thumbnail path hashes the name as the wiki stores it: typed and stored spellings
    # give the same URL.
    assert thumb_url(f"File:{typed}x.jpg", 330) == thumb_url(f"File:{expected}x.jpg", 330)


def test_thumbnail_url_keeps_sharp_s() -> None:
    url = thumb_url("File:ßx.jpg", 330)
    assert "/%C3%9Fx.jpg/" in url and "SSx" not in url


@pytest.mark.parametrize("typed, expected", CASES)
def test_item_image_cache_path(typed: str, expected: str, tmp_path: Path) -> None:
    cache = ItemImageCache(tmp_path, site=None, client=None, width=330)
    assert cache.path_of(f"{typed}x.jpg") == cache.path_of(f"File:{expected}x.jpg")


def test_item_image_cache_does_not_fold_sharp_s(tmp_path: Path) -> None:
    cache = ItemImageCache(tmp_path, site=None, client=None, width=330)
    assert cache.path_of("ßx.jpg") != cache.path_of("SSx.jpg")


# -- the test wiki answers as MediaWiki does --------------------------------------------------
@pytest.fixture(scope="module")
def wiki() -> Iterator[TestWiki]:
    with TestWiki.start() as server:
        yield server


def _normalised(wiki: TestWiki, titles: list[str]) -> tuple[list[str], list[dict[str, str]]]:
    """The page titles and the ``normalized`` list the wiki answers for ``titles``."""
    reply = requests.post(wiki.api_url, data={"action": "query", "titles": "|".join(titles),
                                              "format": "json", "formatversion": "2"}, timeout=10)
    assert reply.status_code == 200, reply.text
    query = reply.json()["query"]
    return [p["title"] for p in query["pages"]], query.get("normalized", [])


def test_test_wiki_keeps_sharp_s(wiki: TestWiki) -> None:
    pages, normalized = _normalised(wiki, ["File:ßx.jpg", "File:ǆx.jpg"])
    assert "File:ßx.jpg" in pages and "File:SSx.jpg" not in pages
    assert not [n for n in normalized if n["from"] == "File:ßx.jpg"]
    assert {"from": "File:ǆx.jpg", "to": "File:ǅx.jpg", "fromencoded": False} in normalized


@pytest.mark.parametrize("typed, expected", CASES)
def test_test_wiki_and_bot_agree(wiki: TestWiki, typed: str, expected: str) -> None:
    raw = f"File:{typed}x_y.jpg"
    pages, _ = _normalised(wiki, [raw])
    assert pages == [f"File:{expected}x y.jpg"] == [check_file_title(raw)]


# -- only core/titles.py capitalises titles ---------------------------------------------------
# ``name[:1].upper()``, ``title[0].upper()``, and the same with .title()/.capitalize().
_HAND_CAPITALISED = re.compile(r"\[\s*(?:0|:\s*1)\s*\]\s*\.\s*(?:upper|title|capitalize)\s*\(\s*\)")
_THE_RULE = Path("wikivel_bot/core/titles.py")


def _hand_capitalised(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.relative_to(root.parent) == _THE_RULE:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if _HAND_CAPITALISED.search(line):
                found.append(f"{path.relative_to(root.parent)}:{number}: {line.strip()}")
    return found


def test_the_guard_sees_the_old_spellings(tmp_path: Path) -> None:
    package = tmp_path / "wikivel_bot"
    (package / "core").mkdir(parents=True)
    (package / "core" / "titles.py").write_text("x = name[:1].upper() + name[1:]\n")
    (package / "a.py").write_text("x = name[:1].upper() + name[1:]\ny = t[0].upper() + t[1:]\nz = n.upper()\n")
    assert _hand_capitalised(package) == ["wikivel_bot/a.py:1: x = name[:1].upper() + name[1:]",
                                          "wikivel_bot/a.py:2: y = t[0].upper() + t[1:]"]


def test_only_core_titles_capitalises_titles() -> None:
    found = _hand_capitalised(ROOT / "wikivel_bot")
    assert not found, ("capitalise titles with wikivel_bot.core.titles.first_upper/page_name "
                       "(MediaWiki's rule), not by hand:\n" + "\n".join(found))
