"""Existing files, listed by the wiki: a category's members (to a depth) and uploads in a
time range. The sources of ``wikivel-bot backfill`` besides title lists and dumps.

Both follow the API's ``continue`` protocol themselves and yield ``File:`` titles as they
arrive, so a category of a million files never sits in memory as a whole.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Dict, Iterator, List, Mapping, Optional, Set

from wikivel_bot.commons import api
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


def files_uploaded_between(site: Any, since: Optional[datetime], until: Optional[datetime]) -> Iterator[str]:
    """``File:`` titles of files whose current version was uploaded in [since, until],
    oldest first (``list=allimages`` sorted by timestamp).

    :raises UsageError: ``since`` after ``until``. :raises WikiError: the API failed.
    """
    if since is not None and until is not None and since > until:
        raise UsageError(f"--since {_mw(since)} is after --until {_mw(until)}")
    params: Dict[str, Any] = {"aisort": "timestamp", "aidir": "newer", "aiprop": "timestamp",
                              "ailimit": "max"}
    if since is not None:
        params["aistart"] = _mw(since)
    if until is not None:
        params["aiend"] = _mw(until)
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


def _mw(when: datetime) -> str:
    if when.tzinfo is not None:
        when = when.astimezone(timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")
