"""The operator's request at Commons:Bots/Requests, filled in from the configuration.

Commons grants the bot flag at the close of a request on Commons:Bots/Requests, after a test
run of a few dozen edits made while the request is open (docs/deploy.md, "Bot approval").
What the community checks there (edit rate, maxlag, the stop page, what a summary looks
like) is what this bot is configured with, so the text is generated rather than retyped:
the rate and maxlag from pywikibot's own configuration (``put_throttle``,
``write_maxlag``), the stop page and batch size from the settings, a summary from the
writer's own summary builder.
"""

from __future__ import annotations

from typing import Any, Dict, List

from wikivel_bot import __version__
from wikivel_bot.core.edit_rules import SummaryItem, group_summary

# A summary as the writer builds it, for an example edit (two items, one prominent).
EXAMPLE_ITEMS = (SummaryItem("Q146", "house cat", True), SummaryItem("Q2934", "goat"))
EXAMPLE_BATCH = "b-20260101120000-1a2b"
# Edits the test run during the request is sized at ("a few dozen").
TEST_RUN_EDITS = 30
# What the text says where a setting is missing: the example configs ship the same words
# (toolforge/wikivel.example.toml has operator_contact = "User:YourName"), so a copied file
# that was never filled in is caught too.
PLACEHOLDER_ACCOUNT = "YourBot"
PLACEHOLDER_OPERATOR = "User:YourName"


def pywikibot_limits() -> Dict[str, Any]:
    """``put_throttle`` (seconds between edits), ``write_maxlag`` and the bot account, as the
    operator's user-config.py sets them (pywikibot's defaults otherwise)."""
    from pywikibot import config

    maxlag = getattr(config, "write_maxlag", None) or getattr(config, "maxlag", None) or 5
    account = config.usernames.get("commons", {}).get("commons", "") if hasattr(config, "usernames") else ""
    return {"put_throttle": float(config.put_throttle), "maxlag": int(maxlag), "account": account}


def edits_per_minute(settings: Any, put_throttle: float) -> float:
    """The most edits a minute the daemon can make: pywikibot's throttle, and the write job's
    batch per round (``write.batch_size`` every ``daemon.link_interval_s``)."""
    by_throttle = 60.0 / put_throttle if put_throttle > 0 else float("inf")
    by_rounds = settings.write.batch_size * 60.0 / settings.daemon.link_interval_s
    return min(by_throttle, by_rounds)


def request_text(settings: Any, limits: Dict[str, Any]) -> str:
    """The wikitext of the request (``{{...}}`` fields Commons:Bots/Requests asks for)."""
    account = limits["account"] or PLACEHOLDER_ACCOUNT
    operator = settings.site.operator_contact or PLACEHOLDER_OPERATOR
    rate = edits_per_minute(settings, limits["put_throttle"])
    stop = settings.daemon.stop_page or "(not set: set daemon.stop_page before filing)"
    summary = group_summary(list(EXAMPLE_ITEMS), ["ExampleReviewer"], __version__, EXAMPLE_BATCH)
    tags = ", ".join(settings.write.tags) or "none"
    lines = [
        f"=== [[User:{account}|{account}]] ===",
        f"* '''Operator:''' [[{operator}]]" if operator.startswith("User:") else f"* '''Operator:''' {operator}",
        "* '''Bot's tasks for which permission is being sought:''' adding depicts (P180) "
        "statements to the structured data of files, only those a human reviewer approved "
        "one by one in the bot's review tool; the bot never adds a statement nobody approved. "
        "All statements approved for one file go into one edit.",
        "* '''Automatic or manually assisted:''' automatic writing of manually approved statements",
        "* '''Edit type (e.g. Continuous, daily, one time run):''' continuous, as reviewers approve",
        f"* '''Maximum edit rate (e.g. edits per minute):''' {rate:g} "
        f"(pywikibot put_throttle = {limits['put_throttle']:g} s; at most "
        f"{settings.write.batch_size} edits every {settings.daemon.link_interval_s} s)",
        f"* '''Maxlag:''' {limits['maxlag']} (edits wait while replication lag is higher)",
        f"* '''Stop page:''' [[{stop}]] — any content other than \"{settings.daemon.stop_run_text}\" "
        "pauses writing before the next edit" if settings.daemon.stop_page else f"* '''Stop page:''' {stop}",
        f"* '''Edit summary''' (example): <code><nowiki>{summary}</nowiki></code>",
        f"* '''Change tags:''' {tags}",
        "* '''Undo:''' every summary names its batch; the operator removes a whole batch with "
        "<code>wikivel-bot revert --batch ID</code>",
        "* '''Bot flag requested: (Y/N):''' Y",
        f"* '''Programming language(s):''' Python (pywikibot); wikivel-bot {__version__}",
        f"* '''Test run:''' about {TEST_RUN_EDITS} edits while this request is open, "
        f"listed at [[Special:Contributions/{account}]]",
        "~~~~",
    ]
    return "\n".join(lines) + "\n"


def placeholders(settings: Any, limits: Dict[str, Any]) -> List[str]:
    """One line per placeholder :func:`request_text` had to print, naming the setting to fill
    in. The text is pasted into a public request: a ``[[User:YourName]]`` left in it names
    nobody (or a stranger), so ``config bot-request`` warns on stderr instead of saying
    nothing.
    """
    found = []
    if not limits["account"] or limits["account"] == PLACEHOLDER_ACCOUNT:
        found.append(f"the bot account is the placeholder {PLACEHOLDER_ACCOUNT!r}: set "
                     "usernames['commons']['commons'] in pywikibot's user-config.py (in $PYWIKIBOT_DIR)")
    operator = settings.site.operator_contact
    if not operator or operator.strip() in (PLACEHOLDER_OPERATOR, f"[[{PLACEHOLDER_OPERATOR}]]"):
        found.append(f"the operator is the placeholder {PLACEHOLDER_OPERATOR!r}: set site.operator_contact "
                     "(or WIKIVEL_SITE_OPERATOR_CONTACT) to your own user page")
    if not settings.daemon.stop_page:
        found.append("the stop page is not set: set daemon.stop_page (or WIKIVEL_DAEMON_STOP_PAGE), "
                     "e.g. User:<the bot account>/Stop, a page holding the run text")
    return found
