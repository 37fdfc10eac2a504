"""Which Commons categories describe the image, and which only describe the file (paper §3.1).

The paper drops categories "merely relating to specific users or upload dates" by pattern
matching (``User:.``, ``Photographs by:.``). The patterns are data: :data:`DEFAULT_PATTERNS`
below, each with the kind it is counted under in the dataset card, and a user file can add
more (``--category-filters FILE``: one ``kind<TAB>regex`` per line, ``#`` comments;
``-kind`` on a line of its own switches a default kind off). Patterns are Python regular
expressions matched case-insensitively with ``re.search`` against the category name without
``Category:`` and with spaces for underscores.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Pattern, Sequence, Tuple

from wikivel_bot.core.titles import page_name
from wikivel_bot.errors import UsageError

# (kind, pattern). Anchored where the phrase only means "about the file" at the start.
DEFAULT_PATTERNS: Tuple[Tuple[str, str], ...] = (
    # Users and authors of the file, not what it shows.
    ("user", r"\bUser:"),
    ("user", r"^(Photographs|Photos|Pictures|Images|Files|Media|Works) (by|from|of) User\b"),
    ("author", r"^(Photographs|Photos|Pictures|Images) (taken )?by "),
    ("author", r"^(Files|Media) (uploaded|contributed|created|donated) by "),
    ("author", r"^Self-published work"),
    # Upload dates and tools, capture dates.
    ("date", r"^(Files|Media|Images|Photos)? ?uploaded (on|in|during) "),
    ("upload", r"^Uploaded (with|via|by|from|using) "),
    ("date", r"^(Photographs|Photos|Pictures) taken on \d{4}"),
    ("date", r"^\d{4}-\d{2}-\d{2}$"),
    # Licenses.
    ("license", (r"^(CC[- ](BY|Zero|0|PD)|Creative Commons|GFDL|FAL|Free Art License|PD[- ]|Public domain|"
                 r"License|Licensed|Attribution only|Copyrighted free use|No known copyright)")),
    # Maintenance, tracking, sources and tools.
    ("maintenance", (r"^(Files|Pages|Media|Images|Photos|Items) (with|without|needing|lacking|missing|"
                     r"requiring|to be|in need of|using|moved|transferred)\b")),
    ("maintenance", (r"^(Hidden categories|Uncategorized|Check categories|Deletion requests|Media needing|"
                     r"Quality images|Featured pictures|Valued images|Pictures of the day|Supported by|"
                     r"Wiki Loves|Template:|Taken with|Photos taken with|Exif)")),
    ("maintenance", r"\b(OTRS|VRT|VRTS) (permission|pending|received)"),
    ("maintenance", r"^(Retouched|Cropped|Scanned) (pictures|images|photos|photographs|files)\b"),
    ("source", (r"^(Files|Images|Media|Photos|Photographs) (from|imported from|transferred from) "
                r"(Flickr|Geograph|Panoramio|Pixabay|Unsplash|Pexels|Mapillary|Wikipedia|[a-z]{2,3}\.wikipedia)")),
)


@dataclass
class CategoryFilter:
    """Compiled patterns plus counters of what each kind removed.

    :param patterns: (kind, compiled regex) in order; the first match decides the kind.
    """

    patterns: Sequence[Tuple[str, Pattern[str]]]
    dropped: Counter = field(default_factory=Counter)
    kept: int = 0

    def keep(self, categories: Iterable[str]) -> Tuple[str, ...]:
        """The categories that describe the image; the others are counted by kind."""
        out: List[str] = []
        for category in categories:
            name = normalise(category)
            if not name:
                continue
            kind = self.kind_of(name)
            if kind is None:
                out.append(name)
                self.kept += 1
            else:
                self.dropped[kind] += 1
        return tuple(dict.fromkeys(out))

    def kind_of(self, name: str) -> Optional[str]:
        """The kind of the first pattern matching ``name`` (None: descriptive, keep it)."""
        for kind, pattern in self.patterns:
            if pattern.search(name):
                return kind
        return None

    def counts(self) -> Dict[str, Any]:
        """For the dataset card: kept, and dropped by kind."""
        return {"kept": self.kept, "dropped": dict(self.dropped.most_common())}


def normalise(category: str) -> str:
    """``Category:Black_cats`` -> ``Black cats`` (prefix dropped, spaces, first letter upper)."""
    return page_name(category, ("Category:",))


def load_filter(path: Optional[Path] = None) -> CategoryFilter:
    """The default patterns, changed by a user file when given (see the module docstring).

    :raises UsageError: an unreadable file, a line without a tab, or a bad regex (with its line).
    """
    rows: List[Tuple[str, str]] = list(DEFAULT_PATTERNS)
    if path is not None:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UsageError(f"cannot read category filters {path}: {exc.strerror or exc}") from None
        for number, line in enumerate(lines, start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            if text.startswith("-") and "\t" not in text:
                rows = [row for row in rows if row[0] != text[1:].strip()]
                continue
            if "\t" not in line:
                raise UsageError(f"{path}:{number}: expected 'kind<TAB>regex', got {line!r}")
            kind, pattern = line.split("\t", 1)
            rows.append((kind.strip(), pattern.strip()))
    compiled = []
    for kind, pattern in rows:
        try:
            compiled.append((kind, re.compile(pattern, re.IGNORECASE)))
        except re.error as exc:
            raise UsageError(f"bad category pattern {pattern!r} ({kind}): {exc}") from None
    return CategoryFilter(compiled)
