"""The patroller's journey in a real browser (Chromium via Playwright), end to end:

OAuth login on the test wiki → review five files with the keys (undo included) → grid
bulk reject (drag to select, undo, reject again) → ``wikivel-bot write --once`` → each
approved statement is on the test wiki exactly once and no rejected one is.

The app runs as an operator runs it: ``wikivel-bot web`` (waitress) in a subprocess. The
screenshots in docs/img/ come from this test (``WIKIVEL_TEST_SCREENSHOTS=1``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from tests.browser_support import DESKTOP, PHONE, ROOT, WebServer, browser, new_context  # noqa: F401 - fixture
from tests.commons_support import thumb_url
from tests.review_support import decision_rows, pair_states
from tests.testwiki import TestWiki
from tests.testwiki.oauth import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from tests.testwiki.pwb import write_config
from tests.web_support import OPERATOR, add_web_users
from tests.writer_support import depicts_on_wiki, edits_of, targets
from wikivel_bot.queue import migrate
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store
from wikivel_bot.types import Candidate, FileState, MediaFile, Upload

pytestmark = pytest.mark.browser

# (page id, title, [(qid, label, description)], key per candidate) – the first candidate of
# each file is right, the second wrong; the lighthouse is approved as prominent.
REVIEW: List[Tuple[int, str, List[Tuple[str, str, str]], List[str]]] = [
    (10004, "Village church.png", [("Q16970", "church building", "building for Christian worship"),
                                   ("Q144", "dog", "domestic animal")], ["1", "3"]),
    (10008, "Snowy mountain peak.jpg", [("Q8502", "mountain", "large natural elevation"),
                                        ("Q146", "house cat", "domesticated feline")], ["1", "3"]),
    (10010, "Lighthouse at dusk.jpg", [("Q39715", "lighthouse", "tower that emits light"),
                                       ("Q144", "dog", "domestic animal")], ["2", "3"]),
    (10012, "Sailing boat at sea.jpg", [("Q35872", "boat", "watercraft"),
                                        ("Q146", "house cat", "domesticated feline")], ["1", "3"]),
    (10014, "Bicycle icon.png", [("Q11442", "bicycle", "pedal-driven two-wheel vehicle"),
                                 ("Q144", "dog", "domestic animal")], ["1", "3"]),
]
# The grid: "human" proposed for four files that show none.
GRID_ITEM = "Q5"
GRID_FILES = [(10016, "Tiny blue square.png"), (10017, "Sunset thumbnail sized.jpg"),
              (10019, "Green leaf.webp"), (10036, "Windmill in fields.jpg")]
USER = "Alice Uploader"


def queue_files(store: Store, wiki: TestWiki) -> None:
    """The queue as the daemon leaves it: files fetched (with thumbnails) and linked."""
    specs = [(p, t, items) for p, t, items, _ in REVIEW]
    specs += [(p, t, [(GRID_ITEM, "human", "any member of Homo sapiens")]) for p, t in GRID_FILES]
    for n, (page_id, name, _items) in enumerate(specs):
        title = "File:" + name
        store.enqueue([Upload(page_id=page_id, title=title, timestamp=datetime(2024, 5, 2, 9, n),
                              uploader="Bob Photographer", mime="image/jpeg")])
    works = {w.page_id: w for w in store.claim_files(FileState.DISCOVERED, 100, "test")}
    for page_id, name, items in specs:
        title = "File:" + name
        store.mark_fetched(works[page_id].id, MediaFile(
            page_id=page_id, title=title, thumb_url=thumb_url(wiki, title, 960),
            description=f"{name.rsplit('.', 1)[0]}, photographed for the test wiki", categories=("Test files",)))
    store.claim_files(FileState.FETCHED, 100, "test")
    for page_id, _, items in specs:
        store.save_candidates(works[page_id].id, [
            Candidate(qid=q, score=round(0.93 - i * 0.31, 2), rank=i + 1, linker="zero-shot", linker_version="1",
                      labelset_hash="h" * 16, evidence={"label": label, "description": text,
                                                        "notes": ["synthetic test suggestion"]})
            for i, (q, label, text) in enumerate(items)])


def child_env(tmp_path: Path, url: str, wiki: TestWiki, **extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WIKIVEL_", "PYWIKIBOT_"))}
    env.update({"PYWIKIBOT_DIR": str(write_config(tmp_path / "operator-pywikibot", wiki)),
                "WIKIVEL_DB_URL": url, "PYTHONPATH": str(ROOT), **extra})
    return env


def shoot(page, tmp_path: Path, name: str) -> None:
    """A screenshot into the test's directory, and into docs/img/ when asked to."""
    target = tmp_path / name
    page.screenshot(path=str(target), full_page=False)
    assert target.stat().st_size > 10_000, f"{name} looks empty"
    if os.environ.get("WIKIVEL_TEST_SCREENSHOTS"):
        shutil.copy(target, ROOT / "docs" / "img" / name)


def test_patroller_journey(browser, tmp_path: Path) -> None:  # noqa: F811 - fixture
    from playwright.sync_api import expect

    with TestWiki.start() as wiki:
        add_web_users(wiki)
        url = f"sqlite:///{tmp_path / 'queue.sqlite'}"
        store = Store(create_engine_for(url))
        migrate.upgrade(store.engine)
        queue_files(store, wiki)
        secrets = tmp_path / "web-secrets.toml"
        secrets.write_text(f'oauth_client_secret = "{DEFAULT_CLIENT_SECRET}"\nsession_secret = "{"x" * 48}"\n')
        server = WebServer(child_env(tmp_path, url, wiki, WIKIVEL_SITE_API_URL=wiki.api_url,
                                     WIKIVEL_WEB_OAUTH_CLIENT_ID=DEFAULT_CLIENT_ID,
                                     WIKIVEL_WEB_SECRETS_FILE=str(secrets)), tmp_path)
        try:
            context = new_context(browser, viewport=DESKTOP)
            page = context.new_page()
            errors: List[str] = []
            page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)

            # 1. Log in with the wiki account: the wiki's consent page, as Alice.
            page.goto(server.url + "/review")
            page.click("#login")
            page.wait_for_url(re.compile(r".*/w/rest\.php/oauth2/authorize.*"))
            page.fill("#wpName", USER)
            page.click("#mw-oauth-allow")
            page.wait_for_selector("#review[data-file='M10004']")
            expect(page.locator("#who")).to_have_text(USER)
            shoot(page, tmp_path, "web-review-desktop.png")
            phone = new_context(browser, viewport=PHONE, storage_state=context.storage_state())
            phone_page = phone.new_page()
            phone_page.goto(server.url + "/review")
            phone_page.wait_for_selector("#review[data-file='M10004']")
            shoot(phone_page, tmp_path, "web-review-phone.png")

            # 2. Five files with the keys; on the first, undo a rejection and redo it.
            for n, (page_id, _, items, keys) in enumerate(REVIEW):
                page.wait_for_selector(f"#review[data-file='M{page_id}']")
                for (qid, _, _), key in zip(items, keys):
                    row = page.locator(f".cand[data-item='{qid}']")
                    expect(row).to_have_class(re.compile(r"\bselected\b"))
                    page.keyboard.press(key)
                    if (qid, key) == (items[-1][0], keys[-1]):
                        break  # the last decision moves on to the next file
                    expect(row).to_have_attribute("data-state", "approved")
                if n == 0:
                    page.wait_for_selector("#review[data-file='M10008']")
                    page.keyboard.press("u")  # back to the church, its "dog" open again
                    page.wait_for_selector("#review[data-file='M10004']")
                    expect(page.locator(".cand[data-item='Q144']")).to_have_attribute("data-state", "proposed")
                    # selected by review.js once it has run on the reloaded page: keys act now
                    expect(page.locator(".cand[data-item='Q144']")).to_have_class(re.compile(r"\bselected\b"))
                    page.keyboard.press("3")
            # Next in the queue: the first grid file; ? shows the keys.
            page.wait_for_selector(f"#review[data-file='M{GRID_FILES[0][0]}']")
            page.wait_for_selector("#candidates .cand.selected")  # review.js has run: keys act
            page.keyboard.press("?")
            expect(page.locator("#help")).to_be_visible()

            # 3. The grid: drag across two files, then select all, reject, undo, reject again.
            page.goto(server.url + f"/grid?item={GRID_ITEM}")
            tiles = page.locator("#tiles .tile")
            expect(tiles).to_have_count(len(GRID_FILES))
            first, second = tiles.nth(0).locator(".pick").bounding_box(), tiles.nth(1).locator(".pick").bounding_box()
            page.mouse.move(first["x"] + 20, first["y"] + 20)
            page.mouse.down()
            page.mouse.move(second["x"] + 20, second["y"] + 20, steps=5)
            page.mouse.up()
            expect(page.locator("#selected-count")).to_have_text("2 selected")
            page.click("#select-all")
            expect(page.locator("#selected-count")).to_have_text(f"{len(GRID_FILES)} selected")
            shoot(page, tmp_path, "web-grid-desktop.png")
            phone_page.goto(server.url + f"/grid?item={GRID_ITEM}")
            phone_page.locator("#tiles .tile .pick").nth(1).click()
            shoot(phone_page, tmp_path, "web-grid-phone.png")
            page.click("#bulk-reject")
            expect(page.locator("#tiles .tile[data-state='rejected']")).to_have_count(len(GRID_FILES))
            page.click("#bulk-undo")
            expect(page.locator("#tiles .tile[data-state='proposed']")).to_have_count(len(GRID_FILES))
            page.click("#select-all")
            page.click("#bulk-reject")
            expect(page.locator("#tiles .tile[data-state='rejected']")).to_have_count(len(GRID_FILES))
            assert not errors, errors
            phone.close()
            context.close()
        finally:
            server.stop()

        approved = {(p, items[0][0]): keys[0] for p, _, items, keys in REVIEW}
        rejected = {(p, items[1][0]) for p, _, items, _ in REVIEW} | {(p, GRID_ITEM) for p, _ in GRID_FILES}
        states = pair_states(store)
        assert {pair: states[pair] for pair in approved} == {
            pair: ("approved", int(key == "2")) for pair, key in approved.items()}
        assert all(states[pair][0] == "rejected" for pair in rejected)
        assert {(r[3], r[4]) for r in decision_rows(store)} == {(USER, "web")}

        # 4. The bot writes what was approved, naming the approver; twice changes nothing.
        env = child_env(tmp_path, url, wiki, WIKIVEL_WRITE_TAGS="wikivel-bot")
        for _ in range(2):
            run = subprocess.run([sys.executable, "-m", "wikivel_bot", "write", "--once"], env=env, cwd=tmp_path,
                                 capture_output=True, text=True, timeout=300)
            assert run.returncode == 0, run.stdout + run.stderr
        for (page_id, qid), key in approved.items():
            statements = depicts_on_wiki(wiki, page_id)
            assert targets(statements).count(qid) == 1, (page_id, targets(statements))
            (mine,) = [s for s in statements if targets([s]) == [qid]]
            assert mine["rank"] == ("preferred" if key == "2" else "normal")
            (edit,) = edits_of(wiki, page_id)
            assert f"[[User:{USER}]]" in edit.summary
        for page_id, qid in rejected:
            assert qid not in targets(depicts_on_wiki(wiki, page_id))
        assert {p for p, _ in GRID_FILES}.isdisjoint({int(e.entity[1:]) for e in wiki.edits})
        assert all(s == "written" for pair, (s, _) in pair_states(store).items() if pair in approved)

        # 5. An operator reverts the batch from its page (the bot account removes the statements).
        operator = WebServer(child_env(tmp_path, url, wiki, WIKIVEL_WEB_OAUTH_URL=wiki.server + "/w/rest.php",
                                       WIKIVEL_WEB_OAUTH_CLIENT_ID=DEFAULT_CLIENT_ID,
                                       WIKIVEL_WEB_SECRETS_FILE=str(secrets), WIKIVEL_WEB_OPERATORS=OPERATOR,
                                       WIKIVEL_WRITE_TAGS="wikivel-bot"), tmp_path)
        try:
            context = new_context(browser, viewport=DESKTOP)
            page = context.new_page()
            page.goto(operator.url + "/batches")
            page.locator("table.list a").first.click()
            expect(page.locator("table.list tbody tr")).to_have_count(len(approved))
            expect(page.locator("#revert")).to_have_count(0)  # not logged in: no revert button
            page.click("#login")
            page.fill("#wpName", OPERATOR)
            page.click("#mw-oauth-allow")
            page.click("#revert")  # asks first: how many statements on how many files
            expect(page.locator("#revert-summary")).to_contain_text(f"{len(approved)} depicts statements")
            page.click("#confirm-revert")
            expect(page.locator(".notice")).to_contain_text(f"requested by {OPERATOR}")
            expect(page.locator(".notice")).to_contain_text(f"{len(approved)} statements removed")
            context.close()
        finally:
            operator.stop()
        for page_id, qid in approved:
            assert qid not in targets(depicts_on_wiki(wiki, page_id))
        assert {pair: s for pair, (s, _) in pair_states(store).items() if pair in approved} == {
            pair: "reverted" for pair in approved}
        store.close()
