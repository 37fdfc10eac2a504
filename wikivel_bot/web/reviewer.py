"""Who is logged in, and what they may do: look, decide, revert batches.

Pure rules over the OAuth profile, so they are tested without a wiki: anyone logged in may
look; members of ``web.allowed_groups`` or the users in ``web.allowed_users`` may decide,
unless blocked; ``web.operators`` (and members of ``web.operator_groups``) may also revert a
write batch and override another reviewer's decision (and decide, unless blocked). A partial
block counts as a block when it keeps the user from editing files at all, and takes only the
files it names otherwise (:mod:`wikivel_bot.web.blocks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Tuple

from wikivel_bot.config import WebSettings
from wikivel_bot.core.review_rules import normalize_name
from wikivel_bot.web.blocks import PartialBlock


@dataclass(frozen=True)
class Reviewer:
    """A logged-in wiki user, as the wiki last described them (at login, then every
    ``web.profile_check_minutes``: :mod:`wikivel_bot.web.sessions`)."""

    name: str
    user_id: str = ""
    groups: Tuple[str, ...] = ()
    blocked: bool = False
    # The wiki's reason for the block (``list=users``' ``blockreason``), "" when unknown.
    block_reason: str = ""
    # The restrictions when the block is partial (None: no block, or a sitewide one).
    # ``blocked`` is true when they keep the user from editing every file.
    partial: Optional[PartialBlock] = None

    def may_decide(self, web: WebSettings) -> bool:
        """True when this user may approve, reject, skip and undo."""
        if self.blocked:
            return False
        if self.is_operator(web):
            return True
        allowed_users = {normalize_name(u, "User") for u in web.allowed_users}
        return self.name in allowed_users or bool(set(self.groups) & set(web.allowed_groups))

    def is_operator(self, web: WebSettings) -> bool:
        """True when this user may revert a batch and override another reviewer's decision
        (``web.operators`` or a member of ``web.operator_groups``; a blocked operator may not)."""
        if self.blocked:
            return False
        return self.name in {normalize_name(u, "User") for u in web.operators} \
            or bool(set(self.groups) & set(web.operator_groups))

    def why_not(self, web: WebSettings) -> str:
        """Why this user may not decide ("" when they may), for the page and 403 answers."""
        if self.blocked:
            why = " ".join(self.block_reason.split())
            covering = self.partial.covers_files() if self.partial else ""
            what = f" from editing files ({self.partial.named()} on {covering})" if self.partial and covering else ""
            return f"{self.name} is blocked on the wiki{what} and cannot review" + (f" (reason: {why})" if why else "")
        if self.may_decide(web):
            return ""
        groups = ", ".join(web.allowed_groups) or "none"
        return f"{self.name} may look but not decide: reviewing needs one of the groups ({groups}) or an allow-list entry"

    def why_not_file(self, page_id: int, title: str) -> str:
        """Why this user may not decide on the file ``title`` (page id ``page_id``) although
        they may review: a partial block naming its page; "" when they may."""
        if self.partial is None or not self.partial.covers(page_id, title):
            return ""
        why = " ".join(self.block_reason.split())
        return (f"{self.name} is blocked on the wiki from editing {title or f'page {page_id}'} "
                f"({self.partial.named()}{f', reason: {why}' if why else ''}) and cannot decide on it")

    def block_note(self) -> str:
        """The quiet line for a reviewer with a partial block that leaves them reviewing
        ("" otherwise: no block, or one that stops all decisions and is said louder)."""
        return self.partial.note() if self.partial is not None and not self.blocked else ""


def from_profile(profile: Mapping[str, Any]) -> Reviewer:
    """The reviewer an OAuth 2.0 ``resource/profile`` answer describes.

    :raises ValueError: the answer has no user name (not a profile).
    """
    name = str(profile.get("username") or "").strip()
    if not name:
        raise ValueError("the wiki's profile answer names no user")
    return Reviewer(name=normalize_name(name, "User"), user_id=str(profile.get("sub", "")),
                    groups=tuple(str(g) for g in profile.get("groups") or ()),
                    blocked=bool(profile.get("blocked")))
