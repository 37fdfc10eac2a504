"""The review page tells a reviewer whose decision lands while the writer holds the pair
what follows ("being written now; it will be removed again"), in Chromium, instead of a
plain success. The app is served by waitress in this process; the writer's
claim is the store's own ``claim_approved``.
"""

from __future__ import annotations

import pytest

from tests.browser_support import browser  # noqa: F401 - fixture
from tests.test_web_browser_evidence import BOB, page_as, served  # noqa: F401 - fixture
from tests.review_support import pair_states
from tests.web_support import web_queue, webwiki  # noqa: F401 - fixtures

pytestmark = [pytest.mark.browser, pytest.mark.parametrize("web_queue", ["sqlite-file"], indirect=True)]


def test_an_undo_of_a_pair_being_written_says_what_follows(browser, served, web_queue) -> None:  # noqa: F811
    """The page changes a decision by undo (a decided row takes no second key): Bob approves,
    the writer takes the pair, Bob undoes — the message says the statement goes again."""
    from playwright.sync_api import expect

    page = page_as(browser, served, BOB)
    cat = page.locator(".cand[data-item='Q146']")
    page.keyboard.press("1")  # Bob approves the cat ...
    expect(cat).to_have_attribute("data-state", "approved")
    assert [e.qid for e in web_queue.claim_approved(10, "write:host:1")] == ["Q146"]  # ... the writer takes it
    page.keyboard.press("u")  # ... and Bob takes his approval back while it is being written
    expect(page.locator("#message")).to_have_text(
        "M10001 Q146 is being written now; it will be removed again (decision recorded)")
    expect(cat).to_have_attribute("data-state", "proposed")
    assert pair_states(web_queue)[(10001, "Q146")] == ("proposed", 0)
    # Not being written: the plain message.
    page.keyboard.press("1")
    expect(cat).to_have_attribute("data-state", "approved")
    page.keyboard.press("u")
    expect(page.locator("#message")).to_have_text("Undone: Q146 is open again.")
    page.context.close()
