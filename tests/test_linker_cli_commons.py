"""`wikivel-bot suggest` on File: titles, URLs and generators, fetched from the local test wiki
through the real Commons fetcher (real pywikibot over real HTTP; no other host is contacted)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("pywikibot")

from click.testing import CliRunner  # noqa: E402

from tests.commons_support import CONTACT, local_only, pywikibot_dir, wiki  # noqa: E402,F401
from tests.linker_support import TINY_MODEL, tiny_model_file, write_animals_artifact  # noqa: E402
from wikivel_bot.cli import main  # noqa: E402


def test_suggest_links_commons_files_by_title_url_and_generator(wiki, local_only, pywikibot_dir, tmp_path, monkeypatch):  # noqa: F811
    tiny_model_file()
    labels = write_animals_artifact(tmp_path / "labels")
    monkeypatch.setenv("WIKIVEL_LINKER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("WIKIVEL_SITE_OPERATOR_CONTACT", CONTACT)
    args = ["--api-url", wiki.api_url, "suggest", "File:Red apple.png", f"{wiki.server}/wiki/File:Dog_in_the_park.jpg",
            "-cat:Cats", "--labels", str(labels), "--top", "3", "--json",
            "--model", TINY_MODEL, "--weights", "random", "--device", "cpu"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    titles = [f["title"] for f in doc["files"]]
    assert titles[:2] == ["File:Red apple.png", "File:Dog in the park.jpg"]
    assert len(titles) >= 3  # at least one file from the category generator
    assert all(f["ok"] and 1 <= len(f["candidates"]) <= 3 for f in doc["files"])
    assert doc["random_weights"] is True
