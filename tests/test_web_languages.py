"""The review page and API show items in the reviewer's language from the label set.

Kept items come from the label set built from the test wiki (``labels.languages`` en, de):
German with ``uselang=de``, English for a language the set lacks; items the set does not
keep (a depicts statement already on the file) come from the wiki's wbgetentities; labels
in any language stay escaped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.review_support import CAT, DOG, add_file
from tests.web_support import make_app, web_queue, webwiki  # noqa: F401 - fixtures are used by name
from wikivel_bot.labels import label_set_from_records
from wikivel_bot.labels.wikidata_api import build_from_api
from wikivel_bot.types import Depiction

# human (Q5) is not in the label set below: it is shown through the look-up.
PRESENT = "Q5"


@pytest.fixture
def wiki_labels(webwiki, tmp_path: Path):  # type: ignore[no-untyped-def]
    return build_from_api(tmp_path / "labels", [146, 144], api_url=webwiki.api_url, display_languages=("en", "de"))


def _candidates(client, **query):  # type: ignore[no-untyped-def]
    answer = client.get("/api/files/M10001", query_string=query)
    assert answer.status_code == 200, answer.json
    return answer.json, {c["item"]: c for c in answer.json["candidates"]}


def test_api_answers_in_the_reviewers_language_from_the_label_set(webwiki, web_queue, wiki_labels) -> None:
    add_file(web_queue, 10001, [CAT, DOG], depicts=[Depiction(PRESENT)])
    app = make_app(webwiki, web_queue, labels=wiki_labels)
    client = app.test_client()
    before = len(webwiki.recorder.api_requests("wbgetentities"))
    body, cands = _candidates(client, uselang="de")
    assert (cands["Q146"]["label"], cands["Q146"]["label_lang"]) == ("Hauskatze", "de")
    # No German description on the test wiki: English, marked as such.
    assert cands["Q146"]["description_lang"] == "en" and cands["Q146"]["description"]
    # The item's P18 from the label set, its thumbnail from the wiki.
    assert cands["Q144"]["image_title"] and cands["Q144"]["image"].startswith(webwiki.server + "/thumb/")
    # Only the item the set does not keep was looked up.
    asked = [r.params["ids"] for r in webwiki.recorder.api_requests("wbgetentities")[before:]]
    assert asked == [PRESENT]
    assert body["depicts"][0]["label"] == "Mensch" and body["depicts"][0]["label_lang"] == "de"
    # French is not kept: English, and said so.
    _, cands = _candidates(client, uselang="fr")
    assert (cands["Q146"]["label"], cands["Q146"]["label_lang"]) == ("house cat", "en")
    # Without uselang the browser's language counts.
    answer = client.get("/api/files/M10001", headers={"Accept-Language": "de-CH,de;q=0.9,en;q=0.5"})
    assert answer.json["candidates"][0]["label"] == "Hauskatze"


def test_page_marks_the_language_of_each_text(webwiki, web_queue, wiki_labels) -> None:
    add_file(web_queue, 10001, [CAT])
    app = make_app(webwiki, web_queue, items=None, labels=wiki_labels)
    page = app.test_client().get("/review?file=M10001&uselang=de").get_data(as_text=True)
    assert '<html lang="de">' in page
    assert 'lang="de">Hauskatze</a>' in page
    assert '<p class="item-desc" lang="en">' in page


def test_labels_in_other_languages_are_escaped(webwiki, web_queue) -> None:
    hostile = '<script>alert("de")</script>'
    labels = label_set_from_records([{
        "qid": "Q146", "label": "house cat", "description": "domesticated feline",
        "texts": [{"lang": "de", "label": hostile, "description": '"><img src=x onerror=alert(1)>'}],
    }])
    add_file(web_queue, 10001, [CAT])
    app = make_app(webwiki, web_queue, items=None, labels=labels)
    client = app.test_client()
    page = client.get("/review?file=M10001&uselang=de").get_data(as_text=True)
    assert hostile not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#34;de&#34;)&lt;/script&gt;" in page
    answer = client.get("/api/files/M10001?uselang=de")
    assert answer.mimetype == "application/json"
    assert answer.json["candidates"][0]["label"] == hostile
    grid = client.get("/grid?item=Q146&uselang=de").get_data(as_text=True)
    assert hostile not in grid and "&lt;script&gt;" in grid
