"""No issue-tracker numbers in code, tests, benches or docs.

A reader outside the project's tracker cannot follow "see issue N" or "(issue N.M)": the
number names nothing they can open. Name what the issue named instead — the behaviour, the
hazard, the rule ("a write resent with the same baserevid", "one Wikidata client") — phrased
in the sentence itself.

The guard scans every tracked (or new, not ignored) text file under ``wikivel_bot/``,
``tests/``, ``bench/``, ``docs/`` and ``toolforge/``, and ``README.md``, ``Makefile`` and
``setup.cfg``; a second test plants references in a scratch tree to show the scanner sees
them and leaves alone what only looks like one (``&#91;`` entities, hex colours, "tissue").
This file holds no reference itself: its samples are built from pieces.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path, PurePosixPath
from typing import Iterable, List

from tests.source_scan import ROOT

SCANNED_FOLDERS = ("wikivel_bot/", "tests/", "bench/", "docs/", "toolforge/")
SCANNED_FILES = frozenset({"README.md", "Makefile", "setup.cfg"})
TEXT_SUFFIXES = frozenset({".py", ".md", ".toml", ".yaml", ".yml", ".cfg", ".txt", ".html", ".js"})

# The word "issue" or "issues" (a whole word: not "tissue"), in any case, then a number, maybe
# after "#", "no." or a dash; the planted samples in the second test show each form.
ISSUE_REFERENCE = re.compile(r"\bissues?\b[\s:-]*(?:#|no\.\s*)?\s*\d", re.IGNORECASE)

# A sample reference for the messages and the planted tree, built so this file does not match.
_WORD = "iss" + "ue"


def scanned(name: str) -> bool:
    """Whether the repository-relative path ``name`` is one of the files the guard reads."""
    if name in SCANNED_FILES:
        return True
    if not name.startswith(SCANNED_FOLDERS):
        return False
    path = PurePosixPath(name)
    return path.suffix in TEXT_SUFFIXES or path.name == "Makefile"


def repository_files(root: Path) -> List[str]:
    """Tracked files and new ones git does not ignore, relative to ``root`` (POSIX paths)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=root, check=True, capture_output=True).stdout.decode("utf-8")
    return sorted({name for name in listed.split("\0") if name})


def issue_references(root: Path, names: Iterable[str]) -> List[str]:
    """Every ``path:line: text`` of ``names`` (under ``root``) that cites an issue by number."""
    found = []
    for name in names:
        path = root / name
        if not path.is_file():  # deleted in the working tree, not yet in the index
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), start=1):
            if ISSUE_REFERENCE.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    return found


def test_no_file_cites_an_issue_by_number() -> None:
    names = [name for name in repository_files(ROOT) if scanned(name)]
    # The guard reads what it should: not an empty selection that would pass by reading nothing.
    assert {"README.md", "docs/deploy.md", "tests/test_no_issue_numbers.py"} <= set(names)
    assert any(name.startswith("wikivel_bot/") for name in names)
    found = issue_references(ROOT, names)
    assert not found, (
        f"{len(found)} line(s) cite the tracker by number; name what the {_WORD} named instead:\n"
        + "\n".join(found))


def test_the_scanner_finds_planted_references_and_nothing_that_only_looks_like_one(
        tmp_path: Path) -> None:
    planted = {
        "docs/note.md": [
            f"The writer never resends ({_WORD} 32.7).",
            f"{_WORD.capitalize()} 29.8: caches in the user's cache directory.",
            f"As {_WORD}s 26 and 27 asked.",
            f"See {_WORD} #12 and {_WORD.upper()}-5.",
            f"{_WORD} 34's figures",
        ],
        "wikivel_bot/clean.py": [
            '"""Brackets escaped as &#91; and &#93;, colour #ff0026, issue #"""',
            "# a tissue 5 mm thick; the issue is open; issues remain; 26 items",
        ],
        "bench/Makefile": [f"# {_WORD} 30"],
        # Not scanned: neither a text suffix nor a scanned place.
        "docs/picture.svg": [f"{_WORD} 26"],
        "other/notes.md": [f"{_WORD} 26"],
    }
    for name, lines in planted.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")

    names = sorted(name for name in planted if scanned(name))
    assert names == ["bench/Makefile", "docs/note.md", "wikivel_bot/clean.py"]
    found = issue_references(tmp_path, names)
    assert found == [f"bench/Makefile:1: # {_WORD} 30"] + [
        f"docs/note.md:{number}: {line}" for number, line in enumerate(planted["docs/note.md"], start=1)]
