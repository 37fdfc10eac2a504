"""The review page in a real browser: "decided elsewhere" appears live, a look-only user
cannot decide, and the tallies show. The app is served by waitress in this process."""

from __future__ import annotations

import re
import threading
from typing import Any, Iterator

import pytest

from tests.browser_support import DESKTOP, browser, new_context  # noqa: F401 - fixture
from tests.commons_support import thumb_url
from tests.review_support import CAT, DOG, HUMAN, add_file, decision_rows
from tests.web_support import NEWBIE, make_app, web_queue, webwiki  # noqa: F401 - fixtures
from wikivel_bot.types import DecisionAction
from wikivel_bot.web.serve import make_server

# The page's behaviour, not the database's: the API tests cover every backend.
pytestmark = [pytest.mark.browser, pytest.mark.parametrize("web_queue", ["sqlite-file"], indirect=True)]


@pytest.fixture
def served(webwiki, web_queue) -> Iterator[str]:  # noqa: F811 - fixtures
    for n, (page_id, name) in enumerate(((10001, "Black cat on sofa.jpg"), (10040, "Cat and dog together.jpg"))):
        file_id = add_file(web_queue, page_id, [CAT, DOG, HUMAN], title="File:" + name, day=n)
        assert file_id
    # Thumbnails from the test wiki (the page must load nothing from elsewhere).
    from sqlalchemy import update

    from wikivel_bot.queue.tables import files

    with web_queue.engine.begin() as conn:
        for page_id, name in ((10001, "Black cat on sofa.jpg"), (10040, "Cat and dog together.jpg")):
            media = {"thumb_url": thumb_url(webwiki, "File:" + name, 330), "description": name,
                     "categories": ["Cats"], "depicts": [], "revid": 1, "protected": False, "bots_allowed": True}
            conn.execute(update(files).where(files.c.page_id == page_id).values(media=media))
    app = make_app(webwiki, web_queue)
    app.config["WIKIVEL_REFRESH_MS"] = 200
    server: Any = make_server(app, "127.0.0.1", 0, 4)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.effective_port}"
    server.close()


def log_in(page: Any, base: str, user: str) -> None:
    page.goto(base + "/review?file=M10001")
    page.click("#login")
    page.wait_for_url(re.compile(r".*/oauth2/authorize.*"))
    page.fill("#wpName", user)
    page.click("#mw-oauth-allow")
    page.wait_for_selector("#review[data-file='M10001']")


def test_decided_elsewhere_appears_live(browser, served, web_queue) -> None:  # noqa: F811
    from playwright.sync_api import expect

    context = new_context(browser, viewport=DESKTOP)
    page = context.new_page()
    log_in(page, served, "Bob Photographer")
    expect(page.locator("#tally")).to_contain_text("you: 0 approved")
    # Someone in the terminal rejects "dog" while Bob looks at the file.
    web_queue.record_decision(10001, "Q144", DecisionAction.REJECT, "Terminal Tom", "terminal")
    dog = page.locator(".cand[data-item='Q144']")
    expect(dog.locator(".status")).to_have_text("already rejected by Terminal Tom elsewhere")
    expect(dog).to_have_attribute("data-state", "rejected")
    # Bob approves the cat; the page skips the dog (decided) and selects "human".
    page.keyboard.press("1")
    expect(page.locator(".cand[data-item='Q146']")).to_have_attribute("data-state", "approved")
    expect(page.locator(".cand[data-item='Q5']")).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("#tally")).to_contain_text("you: 1 approved")
    assert [r for r in decision_rows(web_queue) if r[3] == "Bob Photographer"] == [
        (10001, "Q146", "approve", "Bob Photographer", "web")]
    context.close()


def test_a_look_only_user_cannot_decide(browser, served, web_queue) -> None:  # noqa: F811
    from playwright.sync_api import expect

    context = new_context(browser, viewport=DESKTOP)
    page = context.new_page()
    log_in(page, served, NEWBIE)
    expect(page.locator(".notice")).to_contain_text("may look but not decide")
    page.keyboard.press("1")
    expect(page.locator("#message")).to_contain_text("You may look but not decide")
    expect(page.locator(".cand[data-item='Q146']")).to_have_attribute("data-state", "proposed")
    assert decision_rows(web_queue) == []
    context.close()
