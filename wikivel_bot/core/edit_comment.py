"""What Commons keeps of an edit comment, and how much of it the bot's summary may take.

Commons stores one comment per revision: Wikibase's own autocomment first, then the bot's
summary, the whole cut at 500 characters by MediaWiki (``CommentStore``, with "..."). What
the bot later reads back from its comments — "wikivel-bot", the batch id and the
``[[d:Q146|Q146]]`` link of every item (recovery after a crash, follow-ups, ``revert
--batch``, patrollers) — is lost when it falls past that cut. So every summary builder gets
its room from the *longest* autocomment Wikibase can write before it for that kind of edit:
:func:`adding` (the writer's ``wbeditentity``), :func:`removing` (``wbremoveclaims`` of a
twin removal or a revert), :func:`ranking` (a follow-up's ``wbsetclaim``).

Read from mediawiki-extensions-Wikibase at 3ffc6928d0f455472225716263081965bc1061ac:
``repo/includes/Api/EditSummaryHelper.php`` (which autocomment ``wbeditentity`` gets from the
diff of base and new entity), ``repo/includes/ClaimSummaryBuilder.php`` and
``repo/includes/ChangeOp/ChangeOpStatement.php`` (``wbsetclaim``: the builder's action is
replaced by ``create``/``update``, and an empty summary argument makes the count 2),
``ChangeOpRemoveStatement.php`` (one ``P: value`` pair per removed statement),
``repo/includes/SummaryFormatter.php`` (``/* key:count|lang|args */ autosummary, user summary``),
``Content/ContentHandlerEntityTitleLookup.php`` (a Wikidata entity seen from Commons is
linked as ``[[d:Special:EntityPage/Q146]]``). WikibaseMediaInfo (at
92817a0e2c8814bfceb64d9c0c5875959df8e495) only rewrites coordinates in removal comments.

:func:`plain` is the one cleaning of text that goes into a summary (labels, names): no
wikitext, no control or direction-override character (a label could otherwise flip the
direction of the rest of the line or hide the batch id), NFC as MediaWiki stores it.
"""

from __future__ import annotations

import re
import unicodedata
from typing import List, Sequence

__all__ = ["COMMENT_LIMIT", "ELLIPSIS", "adding", "entity_link", "plain", "ranking", "removing",
           "room", "shorten", "stored"]

# MediaWiki's CommentStore::COMMENT_CHARACTER_LIMIT (characters, not bytes) and the English
# "ellipsis" message it ends a cut comment with (Language::truncateForVisual).
COMMENT_LIMIT = 500
ELLIPSIS = "..."
DEPICTS = "P180"


def entity_link(entity_id: str) -> str:
    """How Wikibase on Commons links a Wikidata entity in a comment (interwiki ``d:``)."""
    return f"[[d:Special:EntityPage/{entity_id}]]"


def _pair(qid: str) -> str:
    """One statement in an autosummary: ``[[…/P180]]: [[…/Q146]]``."""
    return f"{entity_link(DEPICTS)}: {entity_link(qid)}"


def _autocomment(key: str, args: Sequence[str], summary: Sequence[str]) -> str:
    """``SummaryFormatter::formatSummary`` up to where the user summary starts: the block
    comment, the autosummary and the ", " before the user summary."""
    # formatAutoComment joins [count, language, *args]: language is "" for statements.
    head = f"/* {key}:{'|'.join([str(len(summary)), '', *args])} */ "
    text = ", ".join(s for s in summary if s)
    return head + (f"{text}, " if text else "")


def _single(qid: str, count_args: int, actions: Sequence[str]) -> List[str]:
    """The autocomments ``ClaimSummaryBuilder`` gives one changed statement naming ``qid``
    for each of ``actions``, with ``count_args`` summary arguments (1 from
    ``wbeditentity``, 2 from ``wbsetclaim``)."""
    summary = [_pair(qid)] + [""] * (count_args - 1)
    return [_autocomment(f"wbsetclaim-{action}", ["1"], summary) for action in actions]


def adding(qids: Sequence[str]) -> int:
    """The longest autocomment of the writer's ``wbeditentity`` adding one P180 statement
    for each of ``qids`` (characters, the ", " before the bot's summary included).

    One statement changed: ``/* wbsetclaim-create:1||1 */ [[…/P180]]: [[…/Q146]], ``.
    Several: ``/* wbeditentity-statements-single-property-add:1||3 */ [[…/P180]], ``. The
    "update" forms (a statement id the wiki already had is replaced) count too. The
    qualifier, reference and rank forms cannot happen: they change a statement whose item
    the file already shows at the base revision, and the writer skips such an item.
    """
    if not qids:
        return 0
    found = [len(c) for q in qids for c in _single(q, 1, ("create", "update"))]
    n = str(len(qids))
    for sub in ("add", "remove", "update"):
        found.append(len(_autocomment(f"wbeditentity-statements-single-property-{sub}", [n],
                                      [entity_link(DEPICTS)])))
        found.append(len(_autocomment(f"wbeditentity-statements-multiple-properties-{sub}", [n], [])))
    found.append(len(_autocomment("wbeditentity-update", [], [])))
    return max(found)


def removing(qids: Sequence[str]) -> int:
    """The autocomment of a ``wbremoveclaims`` removing one statement for each of ``qids``:
    ``/* wbremoveclaims-remove:2| */ [[…/P180]]: [[…/Q146]], [[…/P180]]: [[…/Q5]], ``.
    It names every removed value, so it grows with the statements (about 62 characters
    each): a removal edit holds only as many as leave the summary its room."""
    qids = [qids] if isinstance(qids, str) else qids
    if not qids:
        return 0
    return len(_autocomment("wbremoveclaims-remove", [], [_pair(q) for q in qids]))


def ranking(qid: str) -> int:
    """The longest autocomment of a follow-up's ``wbsetclaim`` that sets the rank of a
    statement naming ``qid``: ``/* wbsetclaim-update:2||1 */ [[…/P180]]: [[…/Q146]], ``
    (``ChangeOpStatement`` makes it "update"; ``ClaimSummaryBuilder`` alone, as in
    ``wbeditentity``, says "update-rank"). The statement is sent as last read, so only its
    rank differs from the base revision: no qualifier or reference form."""
    return max(len(c) for c in _single(qid, 2, ("create", "update", "update-rank")))


def room(autocomment: int) -> int:
    """Characters left for the bot's summary after an autocomment of that length."""
    return COMMENT_LIMIT - autocomment


def stored(comment: str) -> str:
    """``comment`` as MediaWiki stores it: the first 500 characters, or 497 and "..."."""
    if len(comment) <= COMMENT_LIMIT:
        return comment
    return comment[: COMMENT_LIMIT - len(ELLIPSIS)].rstrip() + ELLIPSIS


# Characters that would make a label wikitext in a summary (links, templates, an auto
# comment): labels are plain text.
_WIKITEXT = re.compile(r"[\[\]{}|<>]|/\*|\*/")
# Control (Cc), format (Cf: the direction marks, embeddings, overrides and isolates
# U+200E-F, U+202A-E, U+2066-9, zero-width characters), surrogates, and line/paragraph
# separators: none may reach a comment.
_HIDDEN = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def plain(text: str) -> str:
    """``text`` fit for a summary: NFC, no control or format character, no wikitext, one
    space between words."""
    text = unicodedata.normalize("NFC", text)
    text = "".join(" " if unicodedata.category(ch) in _HIDDEN else ch for ch in text)
    return unicodedata.normalize("NFC", " ".join(_WIKITEXT.sub(" ", text).split()))


def shorten(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut with "…" ("" when ``limit`` < 2)."""
    if len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…" if limit >= 2 else ""

