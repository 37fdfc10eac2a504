"""What is kept of one entity: fallback texts, usable statements only, first image, depicts."""

from __future__ import annotations

import orjson
import pytest

from tests.fixtures.dumps import make_fixtures
from wikivel_bot.labels import entities
from wikivel_bot.labels.blocks import WikidataOptions, item_json, parse_mediainfo_block, parse_wikidata_block
from wikivel_bot.labels.entities import depicts_of, extract_item, language_chain

ENTITIES = {e["id"]: e for e in make_fixtures.wikidata_entities() if isinstance(e, dict)}
CHAIN = language_chain(["en"])


def test_label_description_aliases_and_image() -> None:
    cat = extract_item(ENTITIES["Q146"], CHAIN, with_aliases=True)
    assert cat is not None
    assert (cat.qid, cat.label, cat.label_lang, cat.description) == (146, "house cat", "en", "domesticated feline")
    assert cat.aliases == ["cat", "domestic cat"]
    assert cat.p279 == [39201] and cat.p31 == []
    assert cat.image == "Cat03.jpg"
    german = extract_item(ENTITIES["Q146"], language_chain(["de", "en"]), with_aliases=True)
    assert german is not None
    assert (german.label, german.label_lang, german.description) == ("Hauskatze", "de", "Haustier")
    assert german.aliases == ["Katze", "cat", "domestic cat"]


def test_language_fallback_ends_with_mul() -> None:
    assert language_chain(["de", "en"]) == ("de", "en", "mul")
    curie = extract_item(ENTITIES["Q7186"], CHAIN)
    assert curie is not None
    assert (curie.label, curie.label_lang) == ("Marie Curie", "mul")
    assert curie.description.startswith("Polish-French")
    laika = extract_item(ENTITIES["Q53662"], language_chain(["fr"]))
    assert laika is not None and laika.label == ""


def test_deprecated_and_non_value_snaks_are_skipped() -> None:
    curie = extract_item(ENTITIES["Q7186"], CHAIN)  # P31: human, deprecated house cat, novalue
    laika = extract_item(ENTITIES["Q53662"], CHAIN)  # P31: dog, somevalue
    assert curie is not None and laika is not None
    assert curie.p31 == [5]
    assert laika.p31 == [144]


def test_preferred_image_wins_over_an_earlier_normal_one() -> None:
    dog = extract_item(ENTITIES["Q144"], CHAIN)
    assert dog is not None and dog.image == "Collage of Nine Dogs.jpg"


def test_blocklisted_class_is_recorded_and_texts_trimmed() -> None:
    paper = extract_item(ENTITIES["Q30249683"], CHAIN, p31_blocklist=frozenset({13442814}))
    assert paper is not None
    assert paper.blocked_by == 13442814
    assert paper.label == "Attention Is All You Need" and paper.description == ""


def test_properties_are_not_items() -> None:
    prop = next(e for e in make_fixtures.wikidata_entities() if isinstance(e, dict) and e["id"] == "P31")
    assert extract_item(prop, CHAIN) is None


def test_sitelinks_cut_keeps_everything_else() -> None:
    line = orjson.dumps(ENTITIES["Q146"])
    cut = item_json(line)
    assert len(cut) < len(line)
    parsed = orjson.loads(cut)
    assert "sitelinks" not in parsed
    assert {k: v for k, v in ENTITIES["Q146"].items() if k not in ("sitelinks", "lastrevid")} == parsed


def test_depicts_ranks_and_empty_statements() -> None:
    files = {e["id"]: e for e in make_fixtures.mediainfo_entities() if isinstance(e, dict)}
    assert depicts_of(files["M102"]) == {146: 1}  # preferred
    assert depicts_of(files["M108"]) == {7186: 0}  # the deprecated house cat is ignored
    assert depicts_of(files["M124"]) == {1420: 0}  # somevalue ignored
    assert depicts_of(files["M127"]) == {}  # "statements": []
    assert depicts_of(files["M130"]) == {146: 0}  # twice on one file counts once


def test_mediainfo_prefilter_counts_files_without_depicts() -> None:
    data = make_fixtures.dump_text(make_fixtures.mediainfo_entities()).encode()
    chunk = parse_mediainfo_block(1, data)
    assert chunk.stats.entities == 30 and chunk.stats.malformed == 1
    assert chunk.with_depicts == 28
    assert sorted(set(chunk.page_ids.tolist())) == [p for p in range(101, 132) if p not in (127, 128, 129)]
    assert chunk.ranks[chunk.page_ids.tolist().index(102)] == 1


def test_lazy_and_full_parsers_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    # simdjson (when installed) and orjson must keep exactly the same things.
    data = make_fixtures.dump_text(make_fixtures.wikidata_entities()).encode() + b"[1, 2]\n"
    options = WikidataOptions(languages=("de", "en"), with_aliases=True, p31_blocklist=frozenset({13442814}))
    fast = parse_wikidata_block(1, data, options)
    monkeypatch.setattr(entities, "_simdjson", None)
    slow = parse_wikidata_block(1, data, options)
    assert fast.texts.equals(slow.texts)
    assert fast.edges.tolist() == slow.edges.tolist() and len(fast.edges) == 25
    assert fast.stats.malformed_lines == slow.stats.malformed_lines
    assert [n for n, _ in slow.stats.malformed_lines] == [13, 37]
