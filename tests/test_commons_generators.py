"""Generator arguments, uploads from pages, and reading File: titles and Commons URLs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.commons_support import local_only, pywikibot_dir, site, site_settings, wiki  # noqa: F401 - pytest fixtures
from wikivel_bot.commons.generators import file_pages, resolve_file, uploads_of
from wikivel_bot.errors import UsageError


def titles(site, *args: str) -> list:
    return [page.title() for page in file_pages(site, list(args))]


def test_category_search_page_and_newimages(site) -> None:
    assert titles(site, "-cat:Cats") == [
        "File:Truncated upload.jpg", "File:Nobots example.jpg", "File:Overwritten photo.jpg"]
    assert titles(site, "-cat:Cats", "-limit:1") == ["File:Truncated upload.jpg"]
    assert titles(site, "-search:sunflower") == ["File:Sunflower field.jpg"]
    assert titles(site, "-page:File:Black cat on sofa.jpg") == ["File:Black cat on sofa.jpg"]
    assert titles(site, "-newimages:3") == [
        "File:Lake in the mountains.jpg", "File:Overwritten photo.jpg", "File:Owl on branch.jpg"]
    # Pages that are not files are passed over.
    assert titles(site, "-page:Main Page") == []


def test_file_of_titles(site, tmp_path: Path) -> None:
    listing = tmp_path / "titles.txt"
    listing.write_text("[[File:Red apple.png]]\n[[File:Village church.png]]\n[[Main Page]]\n", encoding="utf-8")
    assert titles(site, f"-file:{listing}") == ["File:Red apple.png", "File:Village church.png"]


def test_bad_generator_arguments(site) -> None:
    with pytest.raises(UsageError, match="not a pywikibot page generator argument"):
        titles(site, "-nonsense:1")
    with pytest.raises(UsageError, match="a value is needed"):
        titles(site, "-cat")  # pywikibot would stop and ask on the terminal
    with pytest.raises(UsageError, match="not a generator argument"):
        titles(site, "cat:Cats")
    with pytest.raises(UsageError, match="no page generator"):
        titles(site, "-limit:3")


def test_uploads_of_pages(site) -> None:
    uploads = list(uploads_of(site, file_pages(site, ["-cat:Cats"]), batch_size=2))
    assert [u.page_id for u in uploads] == [10021, 10027, 10039]
    first = uploads[0]
    assert (first.title, first.uploader, first.mime, first.width, first.height) == (
        "File:Truncated upload.jpg", "Alice Uploader", "image/jpeg", 800, 600)
    assert first.timestamp.isoformat() == "2024-05-01T10:20:00+00:00"
    assert list(uploads_of(site, ["File:No such file.jpg"])) == []


def test_resolve_file_titles_and_urls(site, wiki) -> None:
    cat = "File:Black cat on sofa.jpg"
    for text in (
        cat,
        "file:Black_cat_on_sofa.jpg",
        f"{wiki.server}/wiki/File:Black_cat_on_sofa.jpg",
        f"{wiki.server}/wiki/File:Black%20cat%20on%20sofa.jpg",
        f"{wiki.server}/w/index.php?title=File:Black_cat_on_sofa.jpg&action=history",
        f"{wiki.server}/w/index.php?curid=10001",
    ):
        assert resolve_file(site, text).title() == cat, text
    assert resolve_file(site, "Image:Dog in the park.jpg").title() == "File:Dog in the park.jpg"


@pytest.mark.parametrize("text, message", [
    ("Black cat on sofa.jpg", "not a file"),
    ("Category:Cats", "not a file"),
    ("https://commons.wikimedia.org/wiki/File:X.jpg", "is not on 127.0.0.1"),
    ("{server}/w/index.php?curid=999999", "no page with id 999999"),
    ("{server}/w/index.php?curid=abc", "must be a page id"),
    ("{server}/w/index.php?curid=1", "not a file"),
    ("{server}/images/a/ab/X.jpg", "not a link to a file page"),
    ("", "no file named"),
])
def test_resolve_file_refuses_everything_else(site, wiki, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        resolve_file(site, text.format(server=wiki.server))
