"""One item-id check, one wikitext escaper, one timestamp formatter, one fetch body, and
SQLAlchemy's own locking clause.

Each "one" has its rules tested here and a guard that scans the source for a second copy
(with a check that the scanner itself sees one): only ``types.py`` checks item ids, only
``core/wikitext.py`` escapes wikitext, only ``core/timestamps.py`` spells MediaWiki's timestamp
format, ``queue/`` has no SQLite branch around ``FOR UPDATE`` (the SQLite compiler leaves the
clause out itself, checked on the installed SQLAlchemy), and the writer keeps no protection
level → right map of its own (pywikibot's ``Page.has_permission`` is used).
"""

from __future__ import annotations

import ast
import html
import re
from datetime import datetime, timedelta, timezone
from typing import Iterator, List, Tuple

import mwparserfromhell
import pytest
from sqlalchemy import select
from sqlalchemy.dialects import mysql, postgresql, sqlite

from tests.source_scan import PACKAGE, code_constants, package_modules
from wikivel_bot.core.timestamps import TIMESTAMP_FORMAT, format_timestamp, parse_timestamp
from wikivel_bot.core.wikitext import wikitext_escape
from wikivel_bot.queue.tables import candidates
from wikivel_bot.types import is_qid, qid_number



# -- one item-id check --------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["Q1", "Q42", "Q146", "Q123456789012"])
def test_item_ids_are_accepted(text: str) -> None:
    assert is_qid(text)
    assert qid_number(text) == int(text[1:])


@pytest.mark.parametrize("text", [
    "Q²", "Q١٢", "Q０", "Q0", "Q01", "q42", "Q42 ", " Q42", "Q42\n", "Q", "", "P42", "M42", "Q-1", "Q+1", "Q4_2",
    "Q1.0", None, 42,
])
def test_anything_else_is_not_an_item_id(text: object) -> None:
    assert not is_qid(text)
    with pytest.raises((ValueError, TypeError)):
        qid_number(text)  # type: ignore[arg-type]


def test_a_bad_item_id_is_named_in_the_error() -> None:
    with pytest.raises(ValueError, match=r"not a Wikidata item id: 'Q²'"):
        qid_number("Q²")


# A regex for item ids: Q before a digit class or \d, or a class of entity letters with Q in it.
_ID_REGEX = re.compile(r"Q(?:\\d|\[[0-9-]+\])|\[[A-Z]*Q[A-Z]*\](?:\\d|\[[0-9-]+\])|\[Qq\]")


def item_id_checks(modules: Iterator[Tuple[str, str]]) -> List[str]:
    """``module:line`` of each hand-written item-id check: a regex for item ids, a comparison
    with "Q" (``x[0] == "Q"``, ``x[:1] in "Qq"``, ``x.startswith("Q")``), or ``qid[1:].isdigit()``."""
    found = []
    for name, source in modules:
        tree = ast.parse(source)
        for node in code_constants(tree):
            text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            if _ID_REGEX.search(text):
                found.append(f"{name}:{node.lineno}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                # Not "q" alone: that is the review terminal's quit key.
                # "M"/"Mm": MediaInfo ids (M123) have their one check too, types.is_mid.
                if any(isinstance(s, ast.Constant) and s.value in ("Q", "Qq", "qQ", "M", "Mm", "mM") for s in sides):
                    found.append(f"{name}:{node.lineno}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                target = node.func.value
                if node.func.attr == "startswith" and any(
                        isinstance(a, ast.Constant) and a.value in ("Q", "M") for a in node.args):
                    found.append(f"{name}:{node.lineno}")
                elif (node.func.attr in ("isdigit", "isdecimal", "isnumeric") and isinstance(target, ast.Subscript)
                      and "qid" in ast.unparse(target.value).lower()):
                    found.append(f"{name}:{node.lineno}")
    return sorted(set(found), key=lambda s: (s.split(":")[0], int(s.split(":")[1])))


def test_only_types_checks_item_ids() -> None:
    found = item_id_checks(package_modules())
    # The dump reader's bytes regex scans raw lines for speed; it must stay ASCII-only.
    dump_reader = [f for f in found if f.startswith("wikivel_bot/labels/dump_reader.py:")]
    assert len(dump_reader) == 1
    source = (PACKAGE / "labels" / "dump_reader.py").read_text(encoding="utf-8")
    pattern = next(n.value for n in code_constants(ast.parse(source)) if isinstance(n.value, bytes) and b"QPLM" in n.value)
    assert b"\\d" not in pattern and b"[1-9][0-9]*" in pattern
    assert [f.split(":")[0] for f in found if f not in dump_reader] == ["wikivel_bot/types.py"] * (len(found) - 1)


def test_the_item_id_scanner_sees_each_kind_of_copy() -> None:
    copies = {
        "a.py": 'import re\nQID = re.compile(r"Q\\d+")\n',
        "b.py": 'def f(x):\n    return x[0] == "Q" and x[1:].isdigit()\n',
        "c.py": 'def f(qid):\n    return qid[1:].isdigit()\n',
        "d.py": 'def f(x):\n    return x.startswith("Q")\n',
        "e.py": 'def f(x):\n    return x[:1] in "Qq"\n',
        "f.py": 'ID = rb"([QPLM]\\d+)"\n',
        "g.py": 'def f(x):\n    return x.isdigit()  # not about ids\n',
        "h.py": 'def f(x):\n    return x[:1] in "Mm" and x[1:].isdigit()\n',
        "i.py": 'def f(x):\n    return x.startswith("M")\n',
    }
    assert item_id_checks(iter(copies.items())) == ["a.py:2", "b.py:2", "c.py:2", "d.py:2", "e.py:2", "f.py:1",
                                                    "h.py:2", "i.py:2"]


# -- one wikitext escaper -----------------------------------------------------------------------

NASTY = [
    "cat | dog ]] {{delete}} <b>x</b> ~~~~ __NOTOC__ ''i''",
    "== heading ==", "* item", "# item", ": indent", "; term", "----", "! header", "{| table",
    "a = b", "&amp; entity", "[[link]]", "line one\nline two", "x |} y", "'''bold'''",
]


@pytest.mark.parametrize("text", NASTY)
def test_escaped_text_stays_text_in_every_place_the_bot_writes_it(text: str) -> None:
    escaped = wikitext_escape(text)
    flat = " ".join(text.split())
    assert html.unescape(escaped) == flat  # MediaWiki shows exactly the text
    assert "\n" not in escaped and "~~~" not in escaped and "__" not in escaped

    paragraph = mwparserfromhell.parse(escaped)
    assert not (paragraph.filter_headings() or paragraph.filter_tags() or paragraph.filter_templates()
                or paragraph.filter_wikilinks() or paragraph.filter_arguments())
    (heading,) = mwparserfromhell.parse(f"== {escaped} ==").filter_headings()
    assert html.unescape(str(heading.title).strip()) == flat
    (link,) = mwparserfromhell.parse(f"[[d:Q1|{escaped}]]").filter_wikilinks()
    assert str(link.title) == "d:Q1" and html.unescape(str(link.text)) == flat
    (item,) = mwparserfromhell.parse(f"* {escaped}").filter_tags()
    assert str(item.tag) == "li"
    table = mwparserfromhell.parse(f'{{| class="wikitable"\n|-\n| {escaped}\n|}}')
    tags = [str(t.tag) for t in table.filter_tags()]
    assert tags.count("table") == 1 and tags.count("td") == 1 and tags.count("tr") == 1


def test_ordinary_text_keeps_its_colons_and_dashes() -> None:
    # Line-start markup is escaped only at the start: "a: b" and "-0.5 – 3" read as written.
    assert wikitext_escape("ratio: 3-4") == "ratio: 3-4"
    assert wikitext_escape("-0.5") == "&#45;0.5"


def wikitext_escapers(modules: Iterator[Tuple[str, str]]) -> List[str]:
    """Modules that spell a character reference for a wikitext markup character."""
    markup = ("&#91;", "&#93;", "&#123;", "&#125;", "&#124;", "&#126;", "&#39;", "&#61;", "&#95;")
    return sorted({name for name, source in modules for node in code_constants(ast.parse(source))
                   if isinstance(node.value, str) and any(ref in node.value for ref in markup)})


def test_only_core_wikitext_escapes_wikitext() -> None:
    assert wikitext_escapers(package_modules()) == ["wikivel_bot/core/wikitext.py"]
    assert wikitext_escapers(iter([("x.py", 'ESC = {"|": "&#124;"}\n')])) == ["x.py"]


# -- one timestamp formatter and parser ---------------------------------------------------------

def test_timestamps_are_mediawikis_form_in_utc() -> None:
    moment = datetime(2024, 5, 1, 8, 0, 0, 123456)
    assert format_timestamp(moment) == "2024-05-01T08:00:00Z"  # naive means UTC
    cest = timezone(timedelta(hours=2))
    assert format_timestamp(datetime(2024, 5, 1, 10, 0, tzinfo=cest)) == "2024-05-01T08:00:00Z"
    assert parse_timestamp("2024-05-01T08:00:00Z") == datetime(2024, 5, 1, 8, tzinfo=timezone.utc)
    assert parse_timestamp(format_timestamp(moment)).tzinfo is timezone.utc
    before = datetime.now(timezone.utc).replace(microsecond=0)
    assert before <= parse_timestamp(format_timestamp()) <= datetime.now(timezone.utc)


@pytest.mark.parametrize("text", ["2024-05-01T08:00:00+02:00", "2024-05-01 08:00:00", "20240501080000", "", "soon"])
def test_other_forms_are_refused_naming_the_text(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"not a MediaWiki timestamp: {text!r}")):
        parse_timestamp(text)


def test_only_core_timestamps_spells_the_format() -> None:
    spelled = [(name, source.count(TIMESTAMP_FORMAT)) for name, source in package_modules() if TIMESTAMP_FORMAT in source]
    assert spelled == [("wikivel_bot/core/timestamps.py", 1)]


# -- one body for the two fetchers ---------------------------------------------------------------

def test_the_fetchers_share_one_body() -> None:
    # fetch_media, fetch_media_by_ids and the Fetcher stage make their request in one place.
    tree = ast.parse((PACKAGE / "commons" / "fetcher.py").read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "query_files"]
    assert len(calls) == 1


# -- locking reads: SQLAlchemy's clause, no SQLite branch ----------------------------------------

def test_the_sqlite_compiler_leaves_for_update_out_and_the_others_keep_it() -> None:
    claim = select(candidates.c.id).limit(5).with_for_update(skip_locked=True)
    check = select(candidates.c.state).where(candidates.c.id == 1).with_for_update()
    for query in (claim, check):
        assert "FOR UPDATE" not in str(query.compile(dialect=sqlite.dialect()))
    assert str(claim.compile(dialect=postgresql.dialect())).endswith("FOR UPDATE SKIP LOCKED")
    assert str(claim.compile(dialect=mysql.dialect(is_mariadb=True))).endswith("FOR UPDATE SKIP LOCKED")
    assert str(check.compile(dialect=postgresql.dialect())).endswith("FOR UPDATE")


def sqlite_lock_branches(modules: Iterator[Tuple[str, str]]) -> List[str]:
    """Functions that both lock rows and test for SQLite (a hand-made "no FOR UPDATE" branch)."""
    found = []
    for name, source in modules:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = ast.unparse(node)
                if "with_for_update" in body and re.search(r"""['"]sqlite['"]""", body):
                    found.append(f"{name}:{node.name}")
    return found


def test_the_queue_has_no_sqlite_branch_around_for_update() -> None:
    queue = ((n, s) for n, s in package_modules() if n.startswith("wikivel_bot/queue/"))
    assert sqlite_lock_branches(queue) == []
    old = ('def _locking(self, query):\n    if self.backend == "sqlite":\n        return query\n'
           '    return query.with_for_update(skip_locked=True)\n')
    assert sqlite_lock_branches(iter([("base.py", old)])) == ["base.py:_locking"]


# -- the writer's protection check is pywikibot's -------------------------------------------------

def test_no_module_keeps_its_own_protection_level_to_right_map() -> None:
    rights = [name for name, source in package_modules() for node in code_constants(ast.parse(source))
              if node.value in ("editprotected", "editsemiprotected")]
    assert rights == []


# -- one MediaInfo-id check ---------------------------------------------------------------------

@pytest.mark.parametrize("text,any_case,expected", [
    ("M1", False, True), ("M123", False, True), ("m123", False, False), ("m123", True, True),
    ("M²", True, False), ("M١٢", True, False), ("M", True, False), ("M12 ", True, False), (12, True, False),
])
def test_mediainfo_ids_are_ascii_m_and_digits(text: object, any_case: bool, expected: bool) -> None:
    from wikivel_bot.types import is_mid

    assert is_mid(text, any_case=any_case) is expected
