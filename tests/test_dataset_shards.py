"""Image shards and the polite thumbnail fetcher: URLs as Commons builds them, shards that
appear only complete, a re-run that fetches nothing, failures remembered, the image store."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any, Dict, List

import pytest

from tests.commons_support import CONTACT, local_only, wiki  # noqa: F401 - pytest fixtures
from tests.commons_support import thumb_url as wiki_thumb_url
from wikivel_bot.commons.thumbnails import ThumbnailClient
from wikivel_bot.errors import UsageError, WikiError
from wikivel_bot.labels import label_set_from_records
from wikivel_bot.train.data.dataset import FileRecord, load_dataset, write_dataset
from wikivel_bot.train.data.fetch import (
    FAILED,
    fetch_item_images,
    fetch_thumbnails,
    read_failed,
    thumb_url,
)
from wikivel_bot.train.data.shards import (
    ImageStore,
    ShardWriter,
    image_extension,
    shard_keys,
)

PHOTOS = ["File:Black cat on sofa.jpg", "File:Dog in the park.jpg", "File:Red bridge over river.jpg",
          "File:Mallard on pond.jpg", "File:Sunflower field.jpg", "File:Snowy mountain peak.jpg"]
MISSING = "File:No such file anywhere.jpg"


def test_thumb_urls_follow_the_commons_layout():
    assert thumb_url("File:Example.jpg", 330) == (
        "https://upload.wikimedia.org/wikipedia/commons/thumb/a/a9/Example.jpg/330px-Example.jpg")
    svg = thumb_url("File:Flag of the world.svg", 250, root="http://m")
    assert svg.startswith("http://m/thumb/") and svg.endswith("/Flag_of_the_world.svg/250px-Flag_of_the_world.svg.png")
    assert thumb_url("Ünïcode name.jpg", 120, root="").endswith("/%C3%9Cn%C3%AFcode_name.jpg/120px-%C3%9Cn%C3%AFcode_name.jpg")


def test_shards_are_complete_tars_keyed_by_page_id(tmp_path):
    with ShardWriter(tmp_path, shard_size=2) as writer:
        for page_id in (11, 12, 13):
            writer.add(str(page_id), b"\x89PNG\r\n\x1a\n" + bytes([page_id]))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["shard-000000.tar", "shard-000001.tar"]  # no .tmp left behind
    with tarfile.open(tmp_path / "shard-000000.tar") as tar:
        assert tar.getnames() == ["11.png", "12.png"]
    assert shard_keys(tmp_path) == {"11", "12", "13"}
    store = ImageStore(tmp_path)
    assert store.get(13) == b"\x89PNG\r\n\x1a\n" + bytes([13])
    assert store.get(99, "File:Nothing.jpg") is None
    # A new writer continues the numbering instead of overwriting.
    with ShardWriter(tmp_path) as writer:
        writer.add("14", b"\xff\xd8\xff")
    assert (tmp_path / "shard-000002.tar").exists() and image_extension(b"\xff\xd8\xff") == "jpg"


def test_store_reads_published_layout_and_loose_files(tmp_path):
    with ShardWriter(tmp_path / "commons_images" / "test") as writer:
        writer.add("4242", b"published")
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "77.jpg").write_bytes(b"by page id")
    (tmp_path / "loose" / "Red fox.jpg").write_bytes(b"by name")
    assert ImageStore(tmp_path / "commons_images").get(4242) == b"published"
    loose = ImageStore(tmp_path / "loose")
    assert loose.get(77) == b"by page id"
    assert loose.get(1, "File:Red_fox.jpg") == b"by name"
    assert loose.get_name("Red fox.jpg") == b"by name"
    before = loose.identity
    (tmp_path / "loose" / "78.jpg").write_bytes(b"more")
    assert ImageStore(tmp_path / "loose").identity != before  # caches see the change
    with pytest.raises(UsageError, match="image directory not found"):
        ImageStore(tmp_path / "nowhere")


def _dataset(tmp_path: Path) -> Any:
    records = [FileRecord(10 + i, title, ("Q146",)) for i, title in enumerate(PHOTOS + [MISSING])]
    labels = label_set_from_records([{"qid": "Q146", "label": "house cat"}])
    write_dataset(records, labels, tmp_path / "ds", fractions=(0.6, 0.2, 0.2))
    return load_dataset(tmp_path / "ds")


class Flaky:
    """A real client whose first answer for one URL is a server error (a transient failure)."""

    def __init__(self, client: ThumbnailClient, flaky_url: str) -> None:
        self.client = client
        self.flaky_url = flaky_url
        self.requested: List[str] = []

    def get_many(self, urls: List[str]) -> Dict[str, Any]:
        self.requested += urls
        results = self.client.get_many([u for u in urls if u != self.flaky_url])
        if self.flaky_url in urls:
            results[self.flaky_url] = WikiError("HTTP 503 after retries")
            self.flaky_url = ""
        return results


def test_fetch_is_polite_and_never_fetches_twice(tmp_path, wiki, local_only):
    dataset = _dataset(tmp_path)
    root = wiki_thumb_url(wiki, PHOTOS[0]).split("/thumb/")[0]
    assert thumb_url(PHOTOS[0], 330, root) == wiki_thumb_url(wiki, PHOTOS[0], 330)  # the URL the API gives
    images = tmp_path / "ds" / "images"
    flaky_url = thumb_url(PHOTOS[2], 330, root)
    with ThumbnailClient(contact=CONTACT, timeout_s=10, retries=0, backoff_s=0.01) as client:
        flaky = Flaky(client, flaky_url)
        first = fetch_thumbnails(dataset, images, flaky, width=330, shard_size=2, root=root)
        assert (first.fetched, first.failed, first.transient) == (len(PHOTOS) - 1, 1, 1)
        assert shard_keys(images) == {str(10 + i) for i in range(len(PHOTOS)) if i != 2}
        assert read_failed(images) == {str(10 + len(PHOTOS))}
        assert "HTTP 404" in (images / FAILED).read_text()
        flaky.requested.clear()
        second = fetch_thumbnails(dataset, images, flaky, width=330, shard_size=2, root=root)
        # Only the transient failure is tried again; fetched and permanently failed files are not.
        assert flaky.requested == [flaky_url]
        assert (second.already_present, second.known_failures, second.fetched) == (len(PHOTOS) - 1, 1, 1)
        flaky.requested.clear()
        third = fetch_thumbnails(dataset, images, flaky, width=330, root=root)
        assert flaky.requested == [] and third.fetched == 0
    sent = [r for r in wiki.requests if r.path.startswith("/thumb/")]
    assert all("/330px-" in r.path for r in sent)
    assert sent and all(CONTACT in r.user_agent for r in sent)
    store = ImageStore(images)
    assert store.get(10)[:3] == b"\xff\xd8\xff"  # the JPEG thumbnail of the first photo
    with pytest.raises(UsageError, match="not a standard step"):
        fetch_thumbnails(dataset, images, flaky, width=331, root=root)


def test_item_images_are_fetched_once_as_named_files(tmp_path, wiki, local_only):
    root = wiki_thumb_url(wiki, PHOTOS[0]).split("/thumb/")[0]
    names = ["Dog_in_the_park.jpg", "Mallard on pond.jpg", "", MISSING.split(":", 1)[1], "Dog in the park.jpg"]
    items = tmp_path / "images" / "items"
    with ThumbnailClient(contact=CONTACT, timeout_s=10, retries=0) as client:
        flaky = Flaky(client, "")
        first = fetch_item_images(names, items, flaky, root=root)
        assert (first.wanted, first.fetched, first.failed) == (3, 2, 1)  # '' skipped, the dog named once
        flaky.requested.clear()
        second = fetch_item_images(names, items, flaky, root=root)
        assert flaky.requested == [] and (second.already_present, second.known_failures) == (2, 1)
    store = ImageStore(tmp_path / "images")
    assert store.get_name("Dog_in_the_park.jpg")[:3] == b"\xff\xd8\xff"
    assert store.get_name("No such file anywhere.jpg") is None
