"""The ``image`` table SQL dump as a backfill source: the fixture is in the dump's real
format (mysqldump header, CREATE TABLE, extended INSERT lines) with the awkward cases —
a ``),(`` inside a quoted blob, a blob that is not UTF-8, escaped quotes and commas in a
name, a NULL media type, other media, a damaged tuple and one with too few fields."""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path

import pytest

from wikivel_bot.backfill import imagedump
from wikivel_bot.backfill.imagedump import DumpCounts, image_titles, is_image_dump, layout_of
from wikivel_bot.errors import UsageError

DUMPS = Path(__file__).resolve().parent / "fixtures" / "dumps"
SAMPLE = DUMPS / "commonswiki-20231101-image-sample.sql"
IMAGES = ["File:Snowy mountain peak.jpg", "File:Lighthouse at dusk.jpg", "File:Red apple.png",
          "File:Map of Europe.svg", "File:O'Brien's (1890), portrait.jpg", "File:Dog in the park.jpg",
          "File:Köln Dom.jpg"]


@pytest.mark.parametrize("suffix", ["", ".gz", ".bz2"])
def test_the_image_dump_gives_its_images_and_counts_the_rest(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / (SAMPLE.name + suffix)
    opener = {"": open, ".gz": gzip.open, ".bz2": bz2.open}[suffix]
    with opener(path, "wb") as out:
        out.write(SAMPLE.read_bytes())
    counts = DumpCounts()
    rows = list(image_titles(str(path), layout_of(str(path)), counts))
    assert [t for t, _ in rows if t] == IMAGES
    assert counts.kept == 7 and counts.other == 2 and counts.damaged == 2
    assert counts.by_type == {"OFFICE": 1, "AUDIO": 1}
    reasons = sorted(r.split(":")[0] for t, r in rows if not t)
    assert reasons == ["damaged dump row"] * 2 + ["not an image"] * 2


def test_column_positions_come_from_the_dumps_create_table(tmp_path: Path) -> None:
    # An older layout (img_description and the user columns before the media type).
    old = tmp_path / "commonswiki-20190101-image.sql"
    old.write_bytes(
        b"CREATE TABLE `image` (\n  `img_name` varbinary(255) NOT NULL DEFAULT '',\n"
        b"  `img_size` int(8) unsigned NOT NULL DEFAULT 0,\n  `img_description` varbinary(767) NOT NULL,\n"
        b"  `img_major_mime` enum('unknown','image') NOT NULL DEFAULT 'unknown',\n"
        b"  `img_media_type` enum('BITMAP','AUDIO') DEFAULT NULL,\n  PRIMARY KEY (`img_name`)\n) ENGINE=InnoDB;\n"
        b"INSERT INTO `image` VALUES ('A.jpg',1,'x, (y)','image','BITMAP'),('B.ogg',1,'','audio','AUDIO');\n")
    layout = layout_of(str(old))
    assert (layout.name, layout.major_mime, layout.media_type, layout.columns) == (0, 3, 4, 5)
    assert [t for t, _ in image_titles(str(old), layout) if t] == ["File:A.jpg"]


def test_a_file_that_is_not_an_image_dump_is_one_clear_error(tmp_path: Path) -> None:
    wrong = DUMPS / "commons-20231107-mediainfo-sample.json.gz"
    with pytest.raises(UsageError, match="not an image table dump"):
        layout_of(str(wrong))
    broken = tmp_path / "commonswiki-1-image.sql.gz"
    broken.write_bytes(b"not gzip at all")
    with pytest.raises(UsageError, match="cannot read the image dump"):
        layout_of(str(broken))
    assert is_image_dump("/d/commonswiki-20231101-image.sql.gz") and not is_image_dump("titles.txt.gz")


def test_the_cli_routes_an_image_dump_given_as_titles_and_refuses_a_wrong_one(tmp_path: Path, monkeypatch) -> None:
    from click.testing import CliRunner

    from wikivel_bot.cli import main as cli

    monkeypatch.chdir(tmp_path)
    wrong = tmp_path / "commonswiki-20231101-image.sql"
    wrong.write_text("[\n{\"id\": \"M1\"}\n]\n")
    result = CliRunner().invoke(cli, ["backfill", "--titles", str(wrong), "--no-progress"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert f"{wrong}: not an image table dump" in result.output


def test_dump_rows_through_ray_and_the_read_stage(ray_runtime, tmp_path: Path) -> None:  # noqa: F811
    """The pipeline's reader task (a generator streaming blocks) and the read/filter stage's
    handling of the rows that are not images."""
    ray = pytest.importorskip("ray")
    from wikivel_bot.backfill import stages
    from wikivel_bot.backfill.pipeline import read_image_dump
    from wikivel_bot.backfill.rows import BackfillCounters, new_row

    path = str(SAMPLE)
    rows = ray.data.from_items([{"path": path}]).map_batches(
        read_image_dump, batch_size=1, fn_kwargs={"layouts": {path: layout_of(path)}}).take_all()
    texts = [r["text"] for r in rows]
    assert [t for t in texts if not t.startswith(imagedump.SETTLED)] == IMAGES and len(texts) == 11
    settled = [new_row(t) for t in texts if t.startswith(imagedump.SETTLED)]
    settled = stages.resolve(settled, fetcher=None, store=None, worker="w", identity=("a", "b", "c"))
    counters = BackfillCounters()
    for row in settled:
        counters.count(row)
    assert counters.skipped == {"damaged dump row": 2, "not an image": 2} and counters.read == 4


from tests.backfill_support import ray_runtime  # noqa: E402,F401
