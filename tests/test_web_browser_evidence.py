"""The evidence stays in view, in Chromium: the file's picture stays on screen
at 1280x720 while the 10th suggestion is selected; keys act on the row that has keyboard
focus; a visitor who may not decide sees disabled buttons and why; an operator's override
from the page; "Depicts now" shows the bot's own writes; undo clears the pair's reviewer;
the batch page fits 390 px. The app is served by waitress in this process.
"""

from __future__ import annotations

import re
import threading
from datetime import datetime
from typing import Any, Iterator

import pytest
from sqlalchemy import select, update

from tests.browser_support import PHONE, browser, new_context  # noqa: F401 - fixture
from tests.commons_support import thumb_url
from tests.review_support import CAT, DOG, HUMAN, add_file, decision_rows, pair_states
from tests.web_support import NEWBIE, OPERATOR, make_app, web_queue, webwiki  # noqa: F401 - fixtures
from wikivel_bot.queue.tables import candidates, files
from wikivel_bot.types import DecisionAction, Written
from wikivel_bot.web.serve import make_server

# The page's behaviour, not the database's: the API tests cover every backend.
pytestmark = [pytest.mark.browser, pytest.mark.parametrize("web_queue", ["sqlite-file"], indirect=True)]

SMALL_DESKTOP = {"width": 1280, "height": 720}
BOB = "Bob Photographer"
ALICE = "Alice Uploader"
# Twelve suggestions for the first file: the tenth is far below the fold.
MANY = [CAT, DOG, HUMAN] + [(f"Q{7000 + i}", 0.5 - i / 100, f"thing number {i}", "a thing shown " * 4)
                            for i in range(9)]
TITLE = "Black cat on sofa.jpg"


@pytest.fixture
def served(webwiki, web_queue) -> Iterator[str]:  # noqa: F811 - fixtures
    add_file(web_queue, 10001, MANY, title="File:" + TITLE, day=0)
    add_file(web_queue, 10040, [CAT, DOG], title="File:Cat and dog together.jpg", day=1)
    media = {"thumb_url": thumb_url(webwiki, "File:" + TITLE, 330), "description": TITLE, "categories": ["Cats"],
             "depicts": [], "revid": 1, "protected": False, "bots_allowed": True}
    with web_queue.engine.begin() as conn:
        conn.execute(update(files).where(files.c.page_id == 10001).values(media=media))
    app = make_app(webwiki, web_queue)
    app.config["WIKIVEL_REFRESH_MS"] = 200
    server: Any = make_server(app, "127.0.0.1", 0, 4)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.effective_port}"
    server.close()


def page_as(browser: Any, base: str, user: str = "", viewport: Any = SMALL_DESKTOP) -> Any:  # noqa: F811
    context = new_context(browser, viewport=viewport)
    page = context.new_page()
    page.goto(base + "/review?file=M10001")
    if user:
        page.click("#login")
        page.wait_for_url(re.compile(r".*/oauth2/authorize.*"))
        page.fill("#wpName", user)
        page.click("#mw-oauth-allow")
    page.wait_for_selector("#review[data-file='M10001']")
    # The row review.js selects as its last step: its keys and clicks are wired from here on
    # (the markup alone comes before the script has run, and a key pressed then is lost).
    page.wait_for_selector("#candidates .cand.selected")
    return page


def written(store: Any, page_id: int, qid: str, batch: str, revid: int) -> None:
    """The writer's record of a statement it added (the pair was approved before)."""
    with store.transaction() as conn:
        cand = conn.execute(select(candidates.c.id).join(files, files.c.id == candidates.c.file_id)
                            .where(files.c.page_id == page_id, candidates.c.qid == qid)).scalar()
    store.record_edit(cand, batch, Written(revid=revid, statement_id=f"M{page_id}$x-{revid}"), datetime(2026, 11, 25))


def test_the_image_stays_in_view_at_the_tenth_suggestion(browser, served) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page = page_as(browser, served, BOB)
    image = page.locator(".main-image")
    page.wait_for_function("document.querySelector('.main-image').complete && "
                           "document.querySelector('.main-image').naturalWidth > 0")
    for _ in range(9):
        page.keyboard.press("ArrowDown")
    tenth = page.locator("#candidates .cand").nth(9)
    expect(tenth).to_have_class(re.compile(r"\bselected\b"))
    assert page.evaluate("window.scrollY") > 300  # the list did scroll to the tenth
    box = image.bounding_box()
    assert box is not None and box["height"] > 100
    assert box["y"] >= 0 and box["y"] + box["height"] <= SMALL_DESKTOP["height"], box
    row = tenth.bounding_box()
    assert row is not None and 0 <= row["y"] < SMALL_DESKTOP["height"]
    page.context.close()


def test_keys_act_on_the_row_with_keyboard_focus(browser, served, web_queue) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page = page_as(browser, served, BOB)
    expect(page.locator("#candidates .cand").first).to_have_class(re.compile(r"\bselected\b"))
    page.focus(".cand[data-item='Q144'] button[data-action='skip']")  # Tab landed on row 2
    page.keyboard.press("1")
    expect(page.locator(".cand[data-item='Q144']")).to_have_attribute("data-state", "approved")
    assert pair_states(web_queue)[(10001, "Q146")] == ("proposed", 0)
    assert [r[1:4] for r in decision_rows(web_queue)] == [("Q144", "approve", BOB)]
    page.context.close()


def test_visitors_who_may_not_decide_see_disabled_buttons_and_why(browser, served, web_queue) -> None:  # noqa: F811
    from playwright.sync_api import expect

    for user, reason in (("", "Log in with your wiki account to decide"), (NEWBIE, "may look but not decide")):
        page = page_as(browser, served, user)
        buttons = page.locator(".cand button[data-action]")
        assert buttons.count() == 4 * len(MANY)
        for i in range(buttons.count()):
            expect(buttons.nth(i)).to_be_disabled()
        expect(page.locator("#undo")).to_be_disabled()
        expect(page.locator("#decide-why")).to_contain_text(reason)
        expect(buttons.first).to_have_attribute("aria-describedby", "decide-why")
        page.context.close()
    assert decision_rows(web_queue) == []


def test_an_operator_overrides_from_the_page_a_reviewer_may_not(browser, served, web_queue) -> None:  # noqa: F811
    from playwright.sync_api import expect

    web_queue.record_decision(10001, "Q146", DecisionAction.APPROVE, ALICE, "terminal")
    page = page_as(browser, served, BOB)
    page.click(".cand[data-item='Q146'] .item-text")
    page.keyboard.press("3")
    expect(page.locator("#message")).to_contain_text(f"approved by {ALICE}: only an operator may override")
    page.context.close()
    page = page_as(browser, served, OPERATOR)
    cat = page.locator(".cand[data-item='Q146']")
    expect(cat.locator(".status")).to_have_text(f"approved by {ALICE}")
    page.click(".cand[data-item='Q146'] .item-text")
    page.keyboard.press("3")
    expect(cat).to_have_attribute("data-state", "rejected")
    expect(cat.locator(".status")).to_have_text(f"rejected by you (override of {ALICE}'s decision)")
    assert pair_states(web_queue)[(10001, "Q146")] == ("rejected", 0)
    assert [r[1:4] for r in decision_rows(web_queue)] == [("Q146", "approve", ALICE), ("Q146", "reject", OPERATOR)]
    # The operator's undo gives the pair back to Alice.
    page.keyboard.press("u")
    expect(cat.locator(".status")).to_have_text(f"approved by {ALICE}")
    expect(page.locator("#message")).to_have_text(f"Undone: Q146 is approved by {ALICE} again.")
    page.context.close()
    assert pair_states(web_queue)[(10001, "Q146")] == ("approved", 0)
    assert [r[1:4] for r in decision_rows(web_queue)] == [("Q146", "approve", ALICE)]


def test_depicts_now_shows_the_bots_writes_and_undo_clears_the_reviewer(browser, served, web_queue) -> None:  # noqa: F811
    from playwright.sync_api import expect

    page = page_as(browser, served, BOB)
    expect(page.locator("#depicts")).to_have_text("nothing yet")
    page.keyboard.press("1")  # Bob approves the cat; the writer writes it
    cat = page.locator(".cand[data-item='Q146']")
    expect(cat).to_have_attribute("data-reviewer", BOB)
    written(web_queue, 10001, "Q146", "b-1", 901)
    expect(page.locator("#depicts")).to_have_text("house cat (Q146) · written by the bot")
    expect(cat).to_have_attribute("data-state", "written")
    # Bob approves the dog and takes it back: the pair waits again, with no reviewer.
    dog = page.locator(".cand[data-item='Q144']")
    expect(dog).to_have_class(re.compile(r"\bselected\b"))
    page.keyboard.press("1")
    expect(dog).to_have_attribute("data-reviewer", BOB)
    page.keyboard.press("u")
    expect(dog).to_have_attribute("data-state", "proposed")
    expect(dog).to_have_attribute("data-reviewer", "")
    file_id = web_queue.file_id_of(10001)
    with web_queue.transaction() as conn:
        reviewer = conn.execute(select(candidates.c.reviewer).where(candidates.c.qid == "Q144",
                                                                    candidates.c.file_id == file_id)).scalar()
    assert reviewer is None
    page.context.close()


def test_the_batch_page_fits_a_phone(browser, served, web_queue) -> None:  # noqa: F811
    from playwright.sync_api import expect

    for qid in ("Q146", "Q144", "Q5"):
        web_queue.record_decision(10001, qid, DecisionAction.APPROVE, ALICE, "terminal")
    batch = "20261125T120000-abcdef0123456789"
    for n, qid in enumerate(("Q146", "Q144", "Q5")):
        written(web_queue, 10001, qid, batch, 1000 + n)
    context = new_context(browser, viewport=PHONE)
    page = context.new_page()
    page.goto(served + "/batches/" + batch)
    expect(page.locator("h1")).to_contain_text(batch)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], width
    context.close()
