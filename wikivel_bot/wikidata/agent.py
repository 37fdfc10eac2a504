"""The one User-Agent of every request wikivel-bot sends itself.

Wikimedia's User-Agent policy (meta.wikimedia.org/wiki/User-Agent_policy) asks for
``tool/version (contact) library/version``: a client without a way to reach its operator may
be blocked. Every HTTP client of the bot takes its header from :func:`user_agent`, and
pywikibot's own header names the tool through :func:`tool_product`; a test holds that no other
module spells the tool's name with a version.
"""

from __future__ import annotations

import requests

from wikivel_bot import __version__

# The product token of the bot and of its review web app (a separate tool on Toolforge).
TOOL = "wikivel-bot"
WEB_TOOL = "wikivel-bot-web"
NO_CONTACT = "operator contact not configured"


def tool_product(tool: str = TOOL) -> str:
    """``tool/version``, e.g. ``wikivel-bot/0.1.0``.

    :param tool: :data:`TOOL` or :data:`WEB_TOOL`.
    """
    return f"{tool}/{__version__}"


def user_agent(contact: str = "", tool: str = TOOL) -> str:
    """``tool/version (contact) python-requests/version``: the whole header.

    :param contact: how to reach the operator (a user page URL or an e-mail address).
    :param tool: :data:`TOOL` or :data:`WEB_TOOL`.
    """
    # Comments in a User-Agent are parenthesised: a contact with parentheses would end it early.
    who = " ".join((contact or NO_CONTACT).replace("(", "[").replace(")", "]").split())
    return f"{tool_product(tool)} ({who}) python-requests/{requests.__version__}"
