"""Existing files, listed by the wiki: a category's members (to a depth) and uploads in a
time range. The sources of ``wikivel-bot backfill`` besides title lists and dumps.

Both follow the API's ``continue`` protocol themselves and yield ``File:`` titles as they
arrive, so a category of a million files never sits in memory as a whole.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Dict, Iterator, List, Mapping, Optional, Set, Tuple

from wikivel_bot.commons import api
from wikivel_bot.core.timestamps import format_timestamp
from wikivel_bot.errors import UsageError

FILE_NS = 6
CATEGORY_NS = 14


def category_files(site: Any, name: str, depth: int = 0) -> Iterator[str]:
    """``File:`` titles in a category and, to ``depth`` levels, in its subcategories.

    Each file is yielded once even when it sits in several of the categories; each
    category is read once even when the category graph has cycles (Commons' has).

    :param name: ``Category:Name`` or just ``Name``.
    :param depth: 0 = the category itself only.
    :raises UsageError: an empty name or a negative depth. :raises WikiError: the API failed.
    """
    title = name.strip()
    if title.lower().startswith("category:"):
        title = title.split(":", 1)[1].strip()
    if not title:
        raise UsageError(f"--category {name!r}: a category name is needed")
    if depth < 0:
        raise UsageError(f"--depth {depth}: must be 0 or more")
    seen_files: Set[str] = set()
    seen_cats: Set[str] = {title}
    level = [title]
    for current_depth in range(depth + 1):
        below: List[str] = []
        for category in level:
            types = "file|subcat" if current_depth < depth else "file"
            for member in _list(site, f"listing Category:{category}", "categorymembers",
                                cmtitle=f"Category:{category}", cmtype=types, cmprop="title|ns",
                                cmlimit="max"):
                member_title = member["title"]
                if member.get("ns") == FILE_NS and member_title not in seen_files:
                    seen_files.add(member_title)
                    yield member_title
                elif member.get("ns") == CATEGORY_NS:
                    sub = member_title.split(":", 1)[1]
                    if sub not in seen_cats:
                        seen_cats.add(sub)
                        below.append(sub)
        level = below


def category_exists(site: Any, name: str) -> Tuple[bool, str]:
    """Whether a category exists, and its title as the wiki spells it (``Category:Name``).

    A category exists when it has a page or any member (Commons has categories with
    members but no page).

    :raises UsageError: an empty name. :raises WikiError: the API failed.
    """
    title = name.strip()
    if title.lower().startswith("category:"):
        title = title.split(":", 1)[1].strip()
    if not title:
        raise UsageError(f"--category {name!r}: a category name is needed")
    data = api.request(site, f"looking up Category:{title}", action="query", titles=f"Category:{title}",
                       prop="info|categoryinfo")
    pages = data.get("query", {}).get("pages") or [{}]
    page = pages[0] if isinstance(pages, list) else next(iter(pages.values()), {})
    shown = str(page.get("title") or f"Category:{title}")
    if page.get("invalid"):
        return False, shown
    members = int((page.get("categoryinfo") or {}).get("size", 0))
    return not page.get("missing") or members > 0, shown


def files_uploaded_between(site: Any, since: Optional[datetime], until: Optional[datetime]) -> Iterator[str]:
    """``File:`` titles of files whose current version was uploaded in [since, until],
    oldest first (``list=allimages`` sorted by timestamp).

    :raises UsageError: ``since`` after ``until``. :raises WikiError: the API failed.
    """
    if since is not None and until is not None and since > until:
        raise UsageError(f"--since {format_timestamp(since)} is after --until {format_timestamp(until)}")
    params: Dict[str, Any] = {"aisort": "timestamp", "aidir": "newer", "aiprop": "timestamp",
                              "ailimit": "max"}
    if since is not None:
        params["aistart"] = format_timestamp(since)
    if until is not None:
        params["aiend"] = format_timestamp(until)
    for image in _list(site, "listing uploads by time", "allimages", **params):
        yield "File:" + image["name"].replace("_", " ") if "title" not in image else image["title"]


def _list(site: Any, what: str, module: str, **params: Any) -> Iterator[Mapping[str, Any]]:
    cont: Mapping[str, Any] = {}
    while True:
        data = api.request(site, what, action="query", list=module, **params, **cont)
        yield from data.get("query", {}).get(module, ())
        if "continue" not in data:
            return
        cont = data["continue"]
