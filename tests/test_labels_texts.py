"""Label sets keep labels and descriptions in the display languages (``labels.languages``).

Built from the fixture dump and from the local test wiki's wbgetentities; the linker's text
and the content hash do not change with them; sets written before them still load.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterator

import pytest
from click.testing import CliRunner

from tests.fixtures.dumps import make_fixtures
from tests.testwiki import TestWiki
from wikivel_bot.cli import main
from wikivel_bot.config import load_settings
from wikivel_bot.errors import ConfigError, LabelSetError
from wikivel_bot.labels import label_set_from_records, load_label_set, starter_label_set_path, write_label_set
from wikivel_bot.labels.build import build_from_dumps
from wikivel_bot.labels.wikidata_api import build_from_api

DUMPS = Path(make_fixtures.__file__).resolve().parent
WIKIDATA = DUMPS / f"{make_fixtures.WIKIDATA}.bz2"
MEDIAINFO = DUMPS / f"{make_fixtures.MEDIAINFO}.bz2"


def _shown(label_set, qid: str, lang: str):  # type: ignore[no-untyped-def]
    text = label_set.texts_in([qid], lang)[qid]
    return text.label, text.label_lang, text.description, text.description_lang


def test_dump_build_keeps_the_display_languages(tmp_path: Path) -> None:
    result = build_from_dumps(tmp_path / "set", wikidata_dump=WIKIDATA, mediainfo_dump=MEDIAINFO, min_freq=3,
                              display_languages=("en", "de"))
    labels = load_label_set(tmp_path / "set", verify=True)
    assert labels.display_languages == ("en", "de")
    # German label and description where the dump has them; fr is not kept, so English.
    assert _shown(labels, "Q146", "de") == ("Hauskatze", "de", "Haustier", "de")
    assert _shown(labels, "Q146", "fr") == ("house cat", "en", "domesticated feline", "en")
    # A German label with only an English description: each falls back on its own.
    assert _shown(labels, "Q144", "de") == ("Haushund", "de", "domestic animal", "en")
    assert _shown(labels, "Q144", "de-at") == ("Haushund", "de", "domestic animal", "en")
    # The linker's text is what it was (site.languages, English here).
    assert labels.labels[labels.index_of("Q146")] == "house cat"
    english_only = build_from_dumps(None, wikidata_dump=WIKIDATA, mediainfo_dump=MEDIAINFO, min_freq=3,
                                    display_languages=("en",))
    # Display texts are outside the content hash: no label index or checkpoint goes stale.
    assert english_only.label_set.content_hash == result.label_set.content_hash
    assert english_only.label_set.manifest["texts_hash"] != result.label_set.manifest["texts_hash"]
    assert {r["lang"] for r in english_only.label_set.data.texts.to_pylist()} == {"en"}


@pytest.fixture(scope="module")
def wiki() -> Iterator[TestWiki]:
    with TestWiki.start() as running:
        yield running


def test_api_build_keeps_the_display_languages(wiki: TestWiki, tmp_path: Path) -> None:
    before = len(wiki.recorder.api_requests("wbgetentities"))
    labels = build_from_api(tmp_path / "set", [146, 144], api_url=wiki.api_url,
                            display_languages=("en", "de", "fr"))
    asked = wiki.recorder.api_requests("wbgetentities")[before].params["languages"].split("|")
    assert {"en", "de", "fr"} <= set(asked)
    labels = load_label_set(tmp_path / "set", verify=True)
    assert _shown(labels, "Q146", "de")[:2] == ("Hauskatze", "de")
    assert _shown(labels, "Q146", "fr")[:2] == ("chat domestique", "fr")
    # The test wiki's items have English descriptions only.
    assert _shown(labels, "Q146", "fr")[3] == "en"
    assert _shown(labels, "Q144", "ja")[:2] == ("dog", "en")


def test_cli_build_reads_labels_languages(wiki: TestWiki, tmp_path: Path) -> None:
    qids = tmp_path / "qids.txt"
    qids.write_text("Q146\n")
    env = {"WIKIVEL_SITE_WIKIDATA_API_URL": wiki.api_url, "WIKIVEL_LABELS_LANGUAGES": "en,fr"}
    result = CliRunner().invoke(main, ["labels", "build", "--from-qids", str(qids), "--out", str(tmp_path / "s")],
                                env=env)
    assert result.exit_code == 0, result.output
    labels = load_label_set(tmp_path / "s")
    assert labels.display_languages == ("en", "fr")
    assert _shown(labels, "Q146", "fr")[0] == "chat domestique" and _shown(labels, "Q146", "de")[0] == "house cat"
    info = CliRunner().invoke(main, ["labels", "info", str(tmp_path / "s")], env=env)
    assert "reviewers: en, fr" in info.output


def test_set_written_before_display_texts_loads_in_english(tmp_path: Path) -> None:
    records = [{"qid": "Q146", "label": "house cat", "description": "domesticated feline",
                "texts": [{"lang": "de", "label": "Hauskatze", "description": "Haustier"}]}]
    out = write_label_set(label_set_from_records(records), tmp_path / "old")
    # What an older wikivel-bot wrote: no texts.arrow, no display keys in the manifest.
    (out / "texts.arrow").unlink()
    manifest = json.loads((out / "manifest.json").read_text())
    for key in ("display_languages", "texts_hash"):
        del manifest[key]
    (out / "manifest.json").write_text(json.dumps(manifest))
    old = load_label_set(out, verify=True)
    assert old.display_languages == () and old.data.texts is None
    assert _shown(old, "Q146", "de") == ("house cat", "en", "domesticated feline", "en")
    assert old.content_hash == label_set_from_records(records).content_hash


def test_changed_texts_fail_verification(tmp_path: Path) -> None:
    out = tmp_path / "set"
    shutil.copytree(starter_label_set_path(), out)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["texts_hash"] = "sha256:" + "0" * 64
    (out / "manifest.json").write_text(json.dumps(manifest))
    load_label_set(out)  # opening does not read everything
    with pytest.raises(LabelSetError, match="texts_hash"):
        load_label_set(out, verify=True)


def test_starter_set_carries_german_and_french() -> None:
    starter = load_label_set(starter_label_set_path(), verify=True)
    assert set(starter.display_languages) >= {"en", "de", "fr"}
    assert _shown(starter, "Q146", "de")[:2] == ("Hauskatze", "de")
    assert _shown(starter, "Q146", "fr")[:2] == ("chat domestique", "fr")
    assert _shown(starter, "Q146", "pt")[:2] == ("house cat", "en")


def test_labels_languages_setting() -> None:
    assert load_settings(env={}).labels.languages[0] == "en"
    assert load_settings(env={"WIKIVEL_LABELS_LANGUAGES": "de, zh-hans"}).labels.languages == ("de", "zh-hans")
    with pytest.raises(ConfigError, match="labels.languages: 'German'"):
        load_settings(env={"WIKIVEL_LABELS_LANGUAGES": "German"})


def test_display_texts_are_read_for_keepable_items_only(tmp_path: Path) -> None:
    import numpy as np

    from wikivel_bot.labels.blocks import WikidataOptions, parse_wikidata_block

    wanted = tmp_path / "display_for.npy"
    np.save(wanted, np.array([146], dtype=np.int64))
    data = WIKIDATA.with_suffix("").read_bytes()
    options = WikidataOptions(display_languages=("en", "de"), display_for=str(wanted))
    rows = {r["qid"]: r["texts"] for r in parse_wikidata_block(1, data, options).texts.to_pylist()}
    # Only depicted (or listed) items can be kept: nobody else's texts are read.
    assert [t["lang"] for t in rows[146]] == ["en", "de"]
    assert rows[144] == [] and rows[729] == []


def test_parallel_dump_build_keeps_the_same_texts(tmp_path: Path) -> None:
    one = build_from_dumps(None, wikidata_dump=WIKIDATA, mediainfo_dump=MEDIAINFO, min_freq=3,
                           display_languages=("en", "de"))
    two = build_from_dumps(None, wikidata_dump=WIKIDATA, mediainfo_dump=MEDIAINFO, min_freq=3,
                           display_languages=("en", "de"), workers=2, spill_dir=tmp_path)
    assert two.label_set.manifest["texts_hash"] == one.label_set.manifest["texts_hash"]
    assert two.label_set.data.texts.num_rows == one.label_set.data.texts.num_rows > len(one.label_set)
