"""Streaming dump readers: formats, decompressors, malformed lines, truncated archives."""

from __future__ import annotations

import bz2
import gzip
import json
from pathlib import Path
from typing import List, Tuple

import pytest

from tests.fixtures.dumps import make_fixtures
from wikivel_bot.errors import DumpError
from wikivel_bot.labels.blocks import (
    WikidataOptions,
    dump_lines,
    parse_mediainfo_block,
    parse_wikidata_block,
)
from wikivel_bot.labels.dump_reader import detect_compression, iter_blocks
from wikivel_bot.labels.parallel import map_blocks

DUMPS = Path(__file__).parent / "fixtures" / "dumps"
WIKIDATA = DUMPS / make_fixtures.WIKIDATA
MEDIAINFO = DUMPS / make_fixtures.MEDIAINFO


def _lines(path: Path, decompressor: str = "auto", block_bytes: int = 1 << 20) -> List[Tuple[int, bytes]]:
    out = []
    for block in iter_blocks(path, decompressor=decompressor, block_bytes=block_bytes):
        out.extend(dump_lines(block.first_line, block.data))
    return out


def test_fixtures_are_what_the_script_writes(tmp_path: Path) -> None:
    make_fixtures.write_all(tmp_path)
    for name in (make_fixtures.WIKIDATA, make_fixtures.MEDIAINFO):
        for suffix in ("", ".bz2", ".gz"):
            assert (tmp_path / f"{name}{suffix}").read_bytes() == (DUMPS / f"{name}{suffix}").read_bytes(), name + suffix


@pytest.mark.parametrize("decompressor", ["auto", "parallel", "stdlib"])
@pytest.mark.parametrize("suffix", ["", ".bz2", ".gz"])
def test_every_format_gives_the_same_lines(suffix: str, decompressor: str) -> None:
    path = Path(f"{WIKIDATA}{suffix}")
    assert detect_compression(path) == {"": "plain", ".bz2": "bz2", ".gz": "gzip"}[suffix]
    # Small blocks: lines must be numbered right across block boundaries.
    lines = _lines(path, decompressor, block_bytes=700)
    expected = [(n, line.rstrip(b",")) for n, line in enumerate(WIKIDATA.read_bytes().split(b"\n"), start=1)
                if line not in (b"[", b"]", b"")]
    assert lines == expected
    assert len(lines) == 34


def test_malformed_lines_are_counted_with_their_number() -> None:
    options = WikidataOptions()
    stats = [parse_wikidata_block(b.first_line, b.data, options).stats for b in iter_blocks(WIKIDATA, block_bytes=500)]
    malformed = [pair for s in stats for pair in s.malformed_lines]
    assert sum(s.malformed for s in stats) == 1
    assert malformed[0][0] == 13 and "cut off" in malformed[0][1]
    # The property line is skipped, not parsed as an item; every other line is an item.
    assert sum(s.skipped for s in stats) == 1
    assert sum(s.entities for s in stats) == 32
    media = [parse_mediainfo_block(b.first_line, b.data) for b in iter_blocks(f"{MEDIAINFO}.gz")]  # type: ignore[arg-type]
    assert [p for c in media for p in c.stats.malformed_lines][0][0] == 30


def test_non_json_line_is_malformed_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    good = json.dumps({"type": "item", "id": "Q42", "labels": {}, "claims": {}})
    path.write_text(f"[\n{good},\n{{not json at all}},\n{good}\n]\n")
    chunk = parse_wikidata_block(1, path.read_bytes(), WikidataOptions())
    assert chunk.stats.entities == 2
    assert chunk.stats.malformed == 1 and chunk.stats.malformed_lines[0][0] == 3


def _big_dump(tmp_path: Path, n: int = 4000) -> bytes:
    lines = [json.dumps({"type": "item", "id": f"Q{i}", "labels": {"en": {"language": "en", "value": f"item {i} " * 20}},
                         "claims": {}}) for i in range(1, n + 1)]
    return ("[\n" + ",\n".join(lines) + "\n]\n").encode()


@pytest.mark.parametrize("decompressor", ["parallel", "stdlib"])
def test_truncated_bz2_archive_stops_with_how_far_it_got(tmp_path: Path, decompressor: str) -> None:
    data = bz2.compress(_big_dump(tmp_path), 1)  # 100 kB blocks: several of them
    path = tmp_path / "latest-all.json.bz2"
    path.write_bytes(data[: int(len(data) * 0.7)])
    with pytest.raises(DumpError) as caught:
        for _ in iter_blocks(path, decompressor=decompressor, block_bytes=64 << 10):
            pass
    message = str(caught.value)
    assert "latest-all.json.bz2" in message and "truncated" in message
    lines = int(message.split("readable up to line ")[1].split()[0])
    assert 0 < lines < 4002
    assert f'the last complete entity is Q{lines - 1}' in message


@pytest.mark.parametrize("decompressor", ["parallel", "stdlib"])
def test_truncated_gzip_archive_is_an_error(tmp_path: Path, decompressor: str) -> None:
    # rapidgzip returns a cut-off stream without complaint; the missing ']' still shows it.
    data = gzip.compress(_big_dump(tmp_path), mtime=0)
    path = tmp_path / "dump.json.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DumpError, match="truncated"):
        for _ in iter_blocks(path, decompressor=decompressor):
            pass


def test_truncated_plain_dump_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "dump.json"
    path.write_bytes(_big_dump(tmp_path)[:50000])
    with pytest.raises(DumpError, match=r"without the closing '\]'"):
        for _ in iter_blocks(path):
            pass


def test_json_lines_without_brackets_are_accepted(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text('{"type":"item","id":"Q1","claims":{}}\n{"type":"item","id":"Q2","claims":{}}')
    assert [n for n, _ in _lines(path)] == [1, 2]


def test_corrupt_archive_is_a_dump_error(tmp_path: Path) -> None:
    path = tmp_path / "dump.json.bz2"
    path.write_bytes(b"BZh9" + b"\x00garbage" * 100)
    with pytest.raises(DumpError, match="dump.json.bz2"):
        list(iter_blocks(path, decompressor="stdlib"))


def test_missing_dump_is_a_dump_error(tmp_path: Path) -> None:
    with pytest.raises(DumpError, match="cannot read"):
        list(iter_blocks(tmp_path / "nope.json.bz2"))


def test_worker_processes_give_the_same_results_in_order() -> None:
    options = WikidataOptions()
    blocks = list(iter_blocks(WIKIDATA, block_bytes=2000))
    assert len(blocks) > 4
    inline = [c.texts.column("qid").to_pylist() for c in map_blocks(blocks, parse_wikidata_block, options, 1)]
    pooled = [c.texts.column("qid").to_pylist() for c in map_blocks(blocks, parse_wikidata_block, options, 2)]
    assert pooled == inline
    assert sum(len(q) for q in inline) == 32
