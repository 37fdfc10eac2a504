"""One ``action=query`` for up to 50 files: file info, categories, wikitext and MediaInfo.

Shared by the poller (which needs enough to apply the eligibility rules) and the fetcher
(which needs everything the linker and the writer read). Asking for all properties of 50
pages at once is what the API is built for; one request per page and property, as page
objects do, would be a hundred times slower and a burden on the servers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from wikivel_bot.commons import api, mediainfo, wikitext
from wikivel_bot.commons.filters import FileFacts

# Titles or page ids per request: the API's limit for users (bots may ask for 500, but
# wikitext of 50 pages is already a large answer).
MAX_BATCH = 50
Key = Union[int, str]


@dataclass
class FileEntry:
    """One page of the answer, with the parts already decoded.

    :param key: the page id or title as asked.
    :param page: the raw page entry (``missing``, ``imageinfo``, ``categories``, …).
    """

    key: Key
    page: Dict[str, Any]
    entity: Dict[str, Any] = field(default_factory=dict)
    text: str = ""

    @property
    def exists(self) -> bool:
        return bool(self.page) and not self.page.get("missing") and not self.page.get("invalid")

    @property
    def page_id(self) -> int:
        return int(self.page.get("pageid") or 0)

    @property
    def title(self) -> str:
        return str(self.page.get("title", ""))

    @property
    def info(self) -> Dict[str, Any]:
        """The current version's imageinfo (``{}`` when the page has no file)."""
        found = self.page.get("imageinfo") or [{}]
        return found[0] if isinstance(found, list) and found else {}

    @property
    def revid(self) -> int:
        revisions = self.page.get("revisions") or [{}]
        return int(revisions[0].get("revid") or self.page.get("lastrevid") or 0)

    def categories(self, hidden: Optional[bool] = None) -> Tuple[str, ...]:
        """Category names without ``Category:``; ``hidden=False`` for visible ones only."""
        out = []
        for row in self.page.get("categories", ()):
            if hidden is not None and bool(row.get("hidden")) != hidden:
                continue
            out.append(wikitext.normalise_name(row.get("title", ""), "Category:"))
        return tuple(dict.fromkeys(out))

    def protection_levels(self) -> Tuple[str, ...]:
        return tuple(p.get("level", "") for p in self.page.get("protection", ()) if p.get("type") == "edit")

    def facts(self, username: Optional[str] = None) -> FileFacts:
        """The eligibility facts (``bots_allowed`` only when the wikitext was asked for)."""
        info = self.info
        return FileFacts(
            exists=self.exists and bool(info),
            mime=info.get("mime", ""),
            mediatype=info.get("mediatype", ""),
            width=int(info.get("width") or 0),
            height=int(info.get("height") or 0),
            uploader=info.get("user", ""),
            categories=self.categories(),
            depicts=mediainfo.depicts_count(self.entity),
            protection_levels=self.protection_levels(),
            bots_allowed=wikitext.bots_allowed(self.text, username) if self.text else True,
            templates=wikitext.templates_used(self.text) if self.text else (),
        )


def query_files(
    site: Any,
    *,
    page_ids: Sequence[int] = (),
    titles: Sequence[str] = (),
    thumb_width: Optional[int] = None,
    with_wikitext: bool = False,
    batch_size: int = MAX_BATCH,
) -> Iterator[FileEntry]:
    """File entries for ``page_ids`` or ``titles``, batch by batch, in the order asked.

    A title that was normalised or is a redirect (a moved file) comes back under the title
    as asked. Missing pages come back with ``exists`` False.

    :param thumb_width: also ask for a thumbnail URL at this width (a standard step).
    :param with_wikitext: also ask for the main slot (description, ``{{nobots}}``) and the
        page protection.
    :param batch_size: at most :data:`MAX_BATCH`.
    :raises WikiError: the API failed.
    """
    size = max(1, min(int(batch_size), MAX_BATCH))
    params: Dict[str, Any] = {
        "prop": ["imageinfo", "categories", "revisions", "info"],
        "iiprop": ["timestamp", "user", "size", "mime", "mediatype", "sha1", "url"],
        "clprop": "hidden",
        "cllimit": "max",
        "rvprop": ["ids", "content"],
        "rvslots": ["main", "mediainfo"] if with_wikitext else ["mediainfo"],
        "redirects": 1,
    }
    if thumb_width:
        params["iiurlwidth"] = int(thumb_width)
    if with_wikitext:
        params["inprop"] = "protection"
    if page_ids:
        for id_batch in api.chunks(list(dict.fromkeys(page_ids)), size):
            result = api.query_pages(site, "reading file pages", pageids=list(id_batch), **params)
            by_id = {p.get("pageid"): p for p in result["pages"] if p.get("pageid")}
            for pid in id_batch:
                yield _entry(pid, by_id.get(pid, {"pageid": pid, "missing": True}))
    if titles:
        for title_batch in api.chunks(list(dict.fromkeys(titles)), size):
            result = api.query_pages(site, "reading file pages", titles=list(title_batch), **params)
            final = api.resolved_titles(result, title_batch)
            by_title = {page.get("title", ""): page for page in result["pages"]}
            for title in title_batch:
                yield _entry(title, by_title.get(final[title], {"title": title, "missing": True}))


def _entry(key: Key, page: Dict[str, Any]) -> FileEntry:
    slots: Mapping[str, Any] = {}
    revisions: List[Dict[str, Any]] = page.get("revisions") or []
    if revisions:
        slots = revisions[0].get("slots") or {}
    main = slots.get("main") or {}
    media = slots.get("mediainfo") or {}
    return FileEntry(
        key=key,
        page=page,
        entity=mediainfo.parse_entity(media.get("content") or media.get("*")),
        text=str(main.get("content") or main.get("*") or ""),
    )
