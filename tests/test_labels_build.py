"""``labels build`` on the fixture dumps, checked against hand-worked outcomes (f = 3).

See tests/fixtures/dumps/make_fixtures.py for the entities and why each outcome holds.
"""

from __future__ import annotations

import bz2
import json
from pathlib import Path
from typing import Any, Dict, List

import pytest
from click.testing import CliRunner, Result

from tests.fixtures.dumps import make_fixtures
from wikivel_bot.cli import main
from wikivel_bot.labels import load_label_set
from wikivel_bot.labels.build import build_from_dumps

DUMPS = Path(__file__).parent / "fixtures" / "dumps"
WIKIDATA = DUMPS / f"{make_fixtures.WIKIDATA}.bz2"
MEDIAINFO = DUMPS / f"{make_fixtures.MEDIAINFO}.bz2"


def run(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def build(out: Path, *extra: Any, wikidata: Path = WIKIDATA, mediainfo: Path = MEDIAINFO) -> Result:
    result = run("labels", "build", "--wikidata-dump", wikidata, "--mediainfo-dump", mediainfo,
                 "--min-freq", 3, "--out", out, "--workers", 1, "--no-progress", *extra)
    assert result.exit_code == 0, result.output
    return result


def lookup(directory: Path, qid: str) -> Dict[str, Any]:
    result = run("labels", "lookup", directory, qid, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def ancestors(info: Dict[str, Any]) -> Dict[str, List[str]]:
    return {hops: [a["qid"] for a in items] for hops, items in info["ancestors"].items()}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("labels") / "set"
    result = build(out, "--keep-files")
    # Malformed lines are reported with their numbers, and the build goes on.
    assert "malformed line 13:" in result.output and "malformed line 30:" in result.output
    assert "files with depicts: 28, dropped (no item left): 6" in result.output
    return out


def test_kept_items(built: Path) -> None:
    labels = load_label_set(built, verify=True)
    assert sorted(labels.qids, key=lambda q: int(q[1:])) == [
        "Q5", "Q144", "Q146", "Q729", "Q1420", "Q41176", "Q3305213",
    ]
    assert labels.labels[labels.index_of("Q146")] == "house cat"
    assert labels.images[labels.index_of("Q144")] == "Collage of Nine Dogs.jpg"


def test_rare_item_is_replaced_by_its_class(built: Path) -> None:
    laika = lookup(built, "Q53662")
    assert laika["status"] == "replaced"
    assert laika["replaced_by"] == [{"qid": "Q144", "label": "dog", "hops": 1}]
    assert laika["direct_count"] == 1
    dog = lookup(built, "Q144")
    assert dog["status"] == "kept" and (dog["direct_count"], dog["accumulated_count"]) == (2, 3)
    assert dog["super_category"] == "animal"
    text = run("labels", "lookup", built, "Q53662").output
    assert "replaced by Q144 (dog, 1 hop up)" in text


def test_generic_item_reaches_f_through_its_instances(built: Path) -> None:
    # human is depicted once itself (M131) and reaches f through the three people.
    human = lookup(built, "Q5")
    assert human["status"] == "kept"
    assert (human["direct_count"], human["accumulated_count"]) == (1, 4)
    assert human["super_category"] == "human"
    for person in ("Q937", "Q762", "Q7186"):
        assert [r["qid"] for r in lookup(built, person)["replaced_by"]] == ["Q5"]


def test_items_never_depicted_themselves_are_never_candidates(built: Path) -> None:
    # §3.1: "Items that are never annotated as depicted across the entire Commons dump are
    # discarded completely." They still accumulate (so their descendants' counts are known)
    # but are neither kept nor a replacement.
    for qid, accumulated in (("Q215627", 4), ("Q39201", 7), ("Q811979", 4), ("Q838948", 3), ("Q752870", 3)):
        info = lookup(built, qid)
        assert (info["status"], info["direct_count"], info["accumulated_count"]) == ("ancestor only", 0, accumulated)
    # bridge's only ancestor within reach is architectural structure (never depicted): dropped.
    bridge = lookup(built, "Q12280")
    assert bridge["status"] == "dropped" and bridge["replaced_by"] == []
    # The people are replaced by human (1 hop), never by person (2 hops, never depicted).
    assert [r["qid"] for r in lookup(built, "Q7186")["replaced_by"]] == ["Q5"]


def test_counts_accumulate_over_three_hops_only(built: Path) -> None:
    animal = lookup(built, "Q729")
    # animal 3 + house cat 4 + dog 2; Laika is 4 hops below and does not count.
    assert (animal["direct_count"], animal["accumulated_count"]) == (3, 9)
    cat = lookup(built, "Q146")
    assert ancestors(cat) == {"1": ["Q39201"], "2": ["Q622852"], "3": ["Q729"]}
    assert ancestors(lookup(built, "Q53662")) == {"1": ["Q144"], "2": ["Q39201"], "3": ["Q622852"]}


def test_item_with_nothing_kept_within_three_hops_is_dropped(built: Path) -> None:
    notre_dame = lookup(built, "Q2981")
    assert notre_dame["status"] == "dropped" and notre_dame["replaced_by"] == []
    assert notre_dame["reason"] == "below the frequency threshold"
    assert "Q41176" not in json.dumps(notre_dame["ancestors"])  # building is 4 hops up
    # building is kept on its own three files; Notre-Dame does not reach it.
    assert lookup(built, "Q41176")["accumulated_count"] == 3
    text = run("labels", "lookup", built, "Q2981").output
    assert "no ancestor within 3 hops reaches f=3" in text


def test_deprecated_statements_are_ignored(built: Path) -> None:
    curie = lookup(built, "Q7186")
    assert ancestors(curie) == {"1": ["Q5"], "2": ["Q215627"]}  # not house cat (deprecated)
    assert curie["label"] == "Marie Curie"  # from the "mul" label
    assert lookup(built, "Q146")["direct_count"] == 4  # M108's deprecated P180 does not count


def test_non_depictable_items_are_removed(built: Path) -> None:
    paper = lookup(built, "Q30249683")
    assert paper["status"] == "dropped" and paper["direct_count"] == 3
    assert paper["reason"] == "not depictable: instance of scholarly article (Q13442814)"
    article = lookup(built, "Q13442814")
    assert article["status"] == "ancestor only" and article["accumulated_count"] == 0
    missing = lookup(built, "Q1")
    assert missing["status"] == "dropped" and "not in the Wikidata dump" in missing["reason"]


def test_files_table_after_filtering(built: Path) -> None:
    files = load_label_set(built).files()
    assert files is not None
    rows = {(r["page_id"], r["qid"]): r for r in files.to_pylist()}
    assert rows[(105, 144)]["source_qid"] == 53662
    assert rows[(102, 146)]["rank"] == 1
    assert {p for p, _ in rows} == set(range(101, 132)) - {118, 119, 120, 121, 122, 123, 127, 128, 129}


def test_manifest_and_info(built: Path) -> None:
    manifest = json.loads((built / "manifest.json").read_text())
    assert manifest["min_freq"] == 3 and manifest["languages"] == ["en"]
    assert [s["date"] for s in manifest["sources"]] == ["2023-11-07", "2023-11-07"]
    assert manifest["counts"]["inputs_dropped"] == 5
    assert manifest["counted_on"] == {"kind": "whole dump"}
    assert manifest["read"]["wikidata"]["malformed_lines"][0][0] == 13
    info = run("labels", "info", built)
    assert info.exit_code == 0
    assert manifest["content_hash"] in info.output and "7 kept" in info.output
    assert "counted:   the whole MediaInfo dump" in info.output


def test_same_input_gives_the_same_hash(tmp_path: Path) -> None:
    hashes = set()
    for n, (wikidata, mediainfo, options) in enumerate([
        (WIKIDATA, MEDIAINFO, {"workers": 1, "decompressor": "auto"}),
        (DUMPS / f"{make_fixtures.WIKIDATA}.gz", DUMPS / make_fixtures.MEDIAINFO, {"workers": 1, "decompressor": "stdlib"}),
        (DUMPS / make_fixtures.WIKIDATA, DUMPS / f"{make_fixtures.MEDIAINFO}.gz", {"workers": 2, "decompressor": "parallel"}),
    ]):
        result = build_from_dumps(tmp_path / f"set{n}", wikidata_dump=wikidata, mediainfo_dump=mediainfo,
                                  min_freq=3, **options)
        hashes.add(result.label_set.content_hash)
    assert len(hashes) == 1
    other = build_from_dumps(None, wikidata_dump=WIKIDATA, mediainfo_dump=MEDIAINFO, min_freq=4)
    assert other.label_set.content_hash not in hashes


def test_unfiltered_set_keeps_depicted_items_only(tmp_path: Path) -> None:
    result = build_from_dumps(None, wikidata_dump=WIKIDATA, mediainfo_dump=MEDIAINFO, min_freq=0)
    labels = result.label_set
    assert "Q53662" in labels and "Q2981" in labels and "Q12280" in labels
    assert "Q5" in labels  # depicted by M131
    assert "Q215627" not in labels  # person: never depicted itself, no hops with f = 0
    assert "Q30249683" not in labels and "Q1" not in labels
    assert len(labels) == 16


def test_operator_lists(tmp_path: Path) -> None:
    allow = tmp_path / "allow.txt"
    allow.write_text("# keep the paper after all\nQ30249683\n")
    block = tmp_path / "block.txt"
    block.write_text("Q144\tdog\n")
    out = tmp_path / "set"
    build(out, "--allowlist", allow, "--blocklist", block)
    assert lookup(out, "Q30249683")["status"] == "kept"
    dog = lookup(out, "Q144")
    assert dog["status"] == "dropped" and dog["reason"] == "on the operator's blocklist"
    # Laika's other ancestors within 3 hops (pet, domesticated animal) are never depicted
    # themselves, and animal is 4 hops up: nothing can replace her.
    laika = lookup(out, "Q53662")
    assert laika["status"] == "dropped" and laika["replaced_by"] == []


def test_from_qids_with_a_dump_and_languages(tmp_path: Path) -> None:
    qids = tmp_path / "qids.txt"
    qids.write_text("Q146\nQ7186\nQ30249683\n")
    out = tmp_path / "set"
    result = run("labels", "build", "--wikidata-dump", WIKIDATA, "--from-qids", qids, "--out", out,
                 "--languages", "de,en", "--aliases", "--workers", 1, "--no-progress")
    assert result.exit_code == 0, result.output
    labels = load_label_set(out)
    assert labels.qids == ["Q146", "Q7186"]
    assert labels.labels == ["Hauskatze", "Marie Curie"]
    assert labels.data.items.column("aliases").to_pylist()[0] == ["Katze", "cat", "domestic cat"]
    assert labels.ancestors("Q146") == {"Q39201": 1, "Q622852": 2, "Q729": 3}


def test_truncated_archive_is_one_clear_error(tmp_path: Path) -> None:
    data = make_fixtures.dump_text(make_fixtures.wikidata_entities() * 40).encode()
    compressed = bz2.compress(data, 1)
    truncated = tmp_path / "wikidata-truncated.json.bz2"
    truncated.write_bytes(compressed[: len(compressed) // 2])
    result = CliRunner().invoke(main, ["labels", "build", "--wikidata-dump", str(truncated), "--mediainfo-dump",
                                       str(MEDIAINFO), "--out", str(tmp_path / "set"), "--no-progress"])
    assert result.exit_code == 1
    error = result.output.strip().splitlines()[-1]
    assert error.startswith("error: ") and "truncated" in error and "wikidata-truncated.json.bz2" in error
    assert "the last complete entity is Q" in error
    readable = int(error.split("readable up to line ")[1].split()[0])
    assert 0 < readable < 40 * 34
    assert not (tmp_path / "set").exists()


def test_usage_errors(tmp_path: Path, built: Path) -> None:
    result = CliRunner().invoke(main, ["labels", "build", "--wikidata-dump", str(WIKIDATA), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--mediainfo-dump" in result.output
    again = CliRunner().invoke(main, ["labels", "build", "--wikidata-dump", str(WIKIDATA), "--mediainfo-dump",
                                      str(MEDIAINFO), "--out", str(built), "--no-progress", "--workers", "1"])
    assert again.exit_code == 1 and "--force" in again.output
    unknown = CliRunner().invoke(main, ["labels", "lookup", str(built), "Q77777"])
    assert unknown.exit_code == 2 and "unknown to this label set" in unknown.output
    bad = CliRunner().invoke(main, ["labels", "lookup", str(built), "cat"])
    assert bad.exit_code == 2 and "not a Wikidata item id" in bad.output
    nothing = CliRunner().invoke(main, ["labels", "info", str(tmp_path)])
    assert nothing.exit_code == 1 and "is not a label set" in nothing.output


def test_f_counted_on_listed_files(tmp_path: Path) -> None:
    # §3.2: f counts depicts "in the training split". The split here leaves out M104 (dog)
    # and M131 (human): dog then has 2 < 3 (M103 and Laika's M105) and is not kept, so
    # Laika has nothing left to go to; human is depicted in the dump (M131, outside the
    # split) so it may still be kept, and reaches 3 through the people, who are in the split.
    # dog goes to animal (3 hops up, kept on M112-M114); Laika's animal is 4 hops up.
    train = tmp_path / "train.txt"
    pages = [p for p in range(101, 131) if p not in (104, 127, 128, 129)]
    train.write_text("# page ids of the training split\n" + "\n".join(f"M{p}" if p % 2 else str(p) for p in pages) + "\n")
    out = tmp_path / "set"
    result = build(out, "--count-files", train)
    assert "f counted on: the 26 files listed in train.txt (26 with depicts" in result.output
    dog = lookup(out, "Q144")
    assert dog["status"] == "replaced" and [r["qid"] for r in dog["replaced_by"]] == ["Q729"]
    assert (dog["direct_count"], dog["accumulated_count"]) == (1, 2)
    assert lookup(out, "Q53662")["status"] == "dropped"
    human = lookup(out, "Q5")
    assert (human["status"], human["direct_count"], human["accumulated_count"]) == ("kept", 0, 3)
    manifest = json.loads((out / "manifest.json").read_text())
    counted = manifest["counted_on"]
    assert (counted["kind"], counted["name"], counted["files"]) == ("files", "train.txt", 26)
    from wikivel_bot.labels.build import page_ids_digest
    assert counted["sha256"] == page_ids_digest(pages)
    info = run("labels", "info", out)
    assert "counted:   the 26 files listed in train.txt" in info.output
    # The same dumps counted whole keep dog.
    whole = build_from_dumps(None, wikidata_dump=WIKIDATA, mediainfo_dump=MEDIAINFO, min_freq=3)
    assert "Q144" in whole.label_set and whole.label_set.manifest["counted_on"] == {"kind": "whole dump"}


def test_count_files_needs_page_ids(tmp_path: Path) -> None:
    bad = tmp_path / "train.txt"
    bad.write_text("101\nFile:Cat.jpg\n")
    result = CliRunner().invoke(main, ["labels", "build", "--wikidata-dump", str(WIKIDATA), "--mediainfo-dump",
                                       str(MEDIAINFO), "--count-files", str(bad), "--out", str(tmp_path / "s")])
    assert result.exit_code == 2
    assert "train.txt:2: not a Commons page id: 'File:Cat.jpg'" in result.output
