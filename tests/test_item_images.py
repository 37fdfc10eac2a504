"""CLIP Fusion's item images (§4.2): P18 thumbnails from the test wiki, fetched once into the
cache beside the label index, failures remembered, and used by the fusion linker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tests.commons_support import CONTACT, media_requests
from tests.commons_support import local_only, pywikibot_dir, site, site_settings, wiki  # noqa: F401 - fixtures
from wikivel_bot.commons.item_images import ItemImageCache, cache_directory
from wikivel_bot.commons.thumbnails import ThumbnailClient
from wikivel_bot.linker.backbone.images import decode_image

NAMES = ["Black_cat_on_sofa.jpg", "Dog in the park.jpg", "Truncated upload.jpg", "No such file here.jpg"]


def cache_for(directory: Path, site: Any) -> ItemImageCache:  # noqa: F811
    client = ThumbnailClient(contact=CONTACT, timeout_s=10, backoff_s=0.01, retries=0)
    return ItemImageCache(directory, site, client, 120)


def test_item_images_are_fetched_once_and_failures_are_remembered(wiki, site, tmp_path) -> None:  # noqa: F811
    directory = cache_directory(str(tmp_path / "cache"), 120)
    assert directory == tmp_path / "cache" / "item-images" / "120px"
    cache = cache_for(directory, site)
    got = cache(NAMES)
    # The two real photos at the 120 px step; the truncated upload and the missing file
    # are failures for good, recorded with their reason.
    assert set(got) == {"Black_cat_on_sofa.jpg", "Dog in the park.jpg"}
    assert decode_image(got["Dog in the park.jpg"]).size[0] == 120
    failed = cache.failed()
    assert set(failed) == {"Truncated upload.jpg", "No such file here.jpg"}
    assert failed["No such file here.jpg"] == "no such file on the wiki"
    assert (cache.stats.fetched, cache.stats.failed) == (2, 2)
    # A second cache on the same directory (another process, another build) asks nothing.
    before = len(media_requests(wiki))
    requests_before = len(wiki.requests)
    again = cache_for(directory, site)
    assert again(NAMES) == got
    assert len(media_requests(wiki)) == before and len(wiki.requests) == requests_before
    assert (again.stats.from_cache, again.stats.failed, again.stats.fetched) == (2, 2, 0)


def test_fusion_reads_item_images_and_notes_the_missing(wiki, site, tmp_path) -> None:  # noqa: F811
    from tests.linker_support import tiny_settings
    from wikivel_bot.labels import label_set_from_records
    from wikivel_bot.linker import create_linker

    labels = label_set_from_records([
        {"qid": "Q146", "label": "house cat", "image": "Black_cat_on_sofa.jpg"},
        {"qid": "Q144", "label": "dog", "image": "Truncated upload.jpg"},
        {"qid": "Q729", "label": "animal"},
    ])
    cache = cache_for(cache_directory(str(tmp_path / "cache"), 120), site)
    with_images = create_linker("fusion", tiny_settings(), item_image_loader=cache)
    info = with_images.attach(labels, str(tmp_path / "index"))
    assert "item images: 1 of 2 P18 images encoded; 1 missing or broken, those items are text only" in info.notes
    text_only = create_linker("fusion", tiny_settings())
    plain = text_only.attach(labels, str(tmp_path / "index"))
    assert "item images not used: no item image source, the item side is text only" in plain.notes
    a = np.asarray(with_images._items, dtype=np.float32)
    b = np.asarray(text_only._items, dtype=np.float32)
    cat, dog, animal = (labels.index_of(q) for q in ("Q146", "Q144", "Q729"))
    # Only the cat's entity embedding has an image in it; the others are text only in both.
    assert not np.allclose(a[cat], b[cat], atol=1e-3)
    assert np.allclose(a[dog], b[dog], atol=2e-3) and np.allclose(a[animal], b[animal], atol=2e-3)


def test_suggest_with_fusion_fetches_item_images_into_the_cache(wiki, local_only, pywikibot_dir, tmp_path,  # noqa: F811
                                                                 monkeypatch) -> None:
    import json

    from click.testing import CliRunner

    from tests.linker_support import TINY_MODEL, tiny_model_file
    from wikivel_bot.cli import main
    from wikivel_bot.labels import label_set_from_records, write_label_set

    tiny_model_file()
    labels = write_label_set(label_set_from_records([
        {"qid": "Q146", "label": "house cat", "image": "Black_cat_on_sofa.jpg"},
        {"qid": "Q144", "label": "dog", "image": "Dog_in_the_park.jpg"},
        {"qid": "Q729", "label": "animal"},
    ]), tmp_path / "labels")
    monkeypatch.setenv("WIKIVEL_LINKER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("WIKIVEL_SITE_OPERATOR_CONTACT", CONTACT)
    args = ["--api-url", wiki.api_url, "suggest", "File:Red apple.png", "--linker", "fusion", "--labels", str(labels),
            "--json", "--model", TINY_MODEL, "--weights", "random", "--device", "cpu"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert "item images: 2 of 2 P18 images encoded" in doc["index"]["notes"]
    stored = sorted((tmp_path / "cache" / "item-images" / "330px").rglob("*.img"))
    assert len(stored) == 2


def test_the_daemon_links_with_fusion_and_item_images(tmp_path) -> None:
    # The daemon builds its linker with the same item image cache as the CLI: a fusion
    # linker whose label index encodes the P18 thumbnails fetched from the wiki.
    from tests.test_daemon import daemon_env, queue_at, settled, start_daemon, stop, wait_for
    from tests.testwiki import TestWiki
    from wikivel_bot.labels import label_set_from_records, write_label_set

    labels = write_label_set(label_set_from_records([
        {"qid": "Q146", "label": "house cat", "image": "Black_cat_on_sofa.jpg"},
        {"qid": "Q144", "label": "dog", "image": "Dog_in_the_park.jpg"},
        {"qid": "Q729", "label": "animal"},
    ]), tmp_path / "labels")
    with TestWiki.start() as running:
        url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
        store = queue_at(url)
        log = tmp_path / "daemon.log"
        env = daemon_env(running, tmp_path, url, WIKIVEL_LINKER_NAME="fusion", WIKIVEL_LINKER_LABELS_DIR=str(labels))
        proc = start_daemon(env, tmp_path, "--dry-run", log=log)
        try:
            wait_for(lambda: settled(store), "the fixture uploads to be linked", proc, log)
        finally:
            code = stop(proc, log)
        assert code == 0, log.read_text()[-3000:]
        stored = sorted((tmp_path / "cache" / "item-images" / "330px").rglob("*.img"))
        # Two for the label index, and the P18 of church building (Q16970), which the village
        # church's description links: outside this label set, encoded on the fly with its image.
        assert len(stored) == 3
        thumbs = [r.path for r in media_requests(running) if r.path.startswith("/thumb/")]
        assert any("Black_cat_on_sofa" in p for p in thumbs) and any("Dog_in_the_park" in p for p in thumbs)
