"""P18 thumbnails for items the label set keeps without a picture: the starter
set carries texts only, so the page asks the wiki (through the bot's cached Wikidata client)
for those items' P18 and shows their thumbnails, instead of "no image" for every suggestion.
"""

from __future__ import annotations

import pytest

from tests.review_support import CAT, DOG, add_file
from tests.web_support import make_app, web_queue, webwiki  # noqa: F401 - fixtures are used by name
from wikivel_bot.labels.starter import build_starter

# The page's look-ups, not the database's: the API tests cover every backend.
pytestmark = pytest.mark.parametrize("web_queue", ["sqlite-file"], indirect=True)


def test_starter_set_items_show_their_p18_from_the_wiki(webwiki, web_queue) -> None:  # noqa: F811
    starter = build_starter()
    assert not starter.texts_in(["Q146", "Q144"], "en")["Q146"].image  # the set has no pictures
    add_file(web_queue, 10001, [CAT, DOG])
    client = make_app(webwiki, web_queue, labels=starter).test_client()
    before = len(webwiki.recorder.api_requests("wbgetentities"))
    answer = client.get("/api/files/M10001?uselang=en")
    assert answer.status_code == 200, answer.json
    cands = {c["item"]: c for c in answer.json["candidates"]}
    for qid in ("Q146", "Q144"):
        assert cands[qid]["image_title"].startswith("File:"), cands[qid]
        assert cands[qid]["image"].startswith(webwiki.server + "/thumb/")
    # The texts are still the label set's; only the pictures came from the wiki.
    assert cands["Q146"]["label"] == "house cat" and cands["Q146"]["label_lang"] == "en"
    page = client.get("/review?file=M10001").get_data(as_text=True)
    assert page.count('class="noimg"') == 0 and cands["Q146"]["image"] in page
    # Cached: the next page asks the wiki nothing more about these items.
    asked = len(webwiki.recorder.api_requests("wbgetentities"))
    assert asked > before
    client.get("/api/files/M10001?uselang=en")
    assert len(webwiki.recorder.api_requests("wbgetentities")) == asked
