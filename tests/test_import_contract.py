"""The dependency direction of HOUSE_STYLE.md, checked on the source rather than by memory.

types/errors ← core ← everything else; torch only in linker/ and train/; pywikibot only in
commons/; SQLAlchemy/Alembic only in queue/ (and migrations/); click only in cli/. Imports
inside functions count too: a lazy import still drags the package in when it runs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, Set, Tuple

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "wikivel_bot"

# third-party top-level name -> the subpackages (relative to wikivel_bot) allowed to import it
RESTRICTED: Dict[str, Tuple[str, ...]] = {
    "torch": ("linker", "train"),
    "torchvision": ("linker", "train"),
    "open_clip": ("linker", "train"),
    "pywikibot": ("commons",),
    "sqlalchemy": ("queue",),
    "alembic": ("queue",),
    "click": ("cli",),
    # The web review: Flask and its parts, the OAuth client, the WSGI server.
    "flask": ("web",),
    "werkzeug": ("web",),
    "jinja2": ("web",),
    "authlib": ("web",),
    "waitress": ("web",),
    # The backfill room alone runs on Ray; it reaches the wiki, the queue and the model only
    # through commons/, queue/ and linker/ (the rules above keep pywikibot, SQLAlchemy and
    # torch out of it).
    "ray": ("backfill",),
}
# core may import these and nothing else outside the standard library
CORE_ALLOWED_INTERNAL = ("wikivel_bot.types", "wikivel_bot.errors", "wikivel_bot.core")


def imports(path: Path) -> Iterator[Tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node.lineno


def subpackage(path: Path) -> str:
    rel = path.relative_to(PACKAGE).parts
    return rel[0] if len(rel) > 1 else rel[0].removesuffix(".py")


def python_files() -> Iterator[Path]:
    yield from sorted(PACKAGE.rglob("*.py"))


def test_restricted_libraries_stay_in_their_layer() -> None:
    problems = []
    for path in python_files():
        where = subpackage(path)
        for module, line in imports(path):
            top = module.split(".")[0]
            allowed = RESTRICTED.get(top)
            if allowed is not None and where not in allowed:
                problems.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not problems, "layering broken:\n" + "\n".join(problems)


def test_core_uses_only_the_standard_library() -> None:
    stdlib: Set[str] = set(sys.stdlib_module_names) | {"__future__"}
    problems = []
    for path in (PACKAGE / "core").rglob("*.py"):
        for module, line in imports(path):
            top = module.split(".")[0]
            if top == "wikivel_bot":
                if not module.startswith(CORE_ALLOWED_INTERNAL):
                    problems.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
            elif top not in stdlib:
                problems.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not problems, "core must stay pure:\n" + "\n".join(problems)


def test_types_and_errors_import_nothing_of_ours() -> None:
    for name in ("types.py", "errors.py"):
        for module, line in imports(PACKAGE / name):
            assert not (module.startswith("wikivel_bot") and not module.startswith("wikivel_bot.errors")), (
                f"{name}:{line} imports {module}"
            )


def test_contract_checker_catches_a_violation(tmp_path: Path) -> None:
    """The checker itself must see function-level imports (or the tests above prove nothing)."""
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    import torch\n    from sqlalchemy import select\n")
    assert [m for m, _ in imports(sample)] == ["torch", "sqlalchemy"]


def test_cli_starts_without_torch_or_pywikibot() -> None:
    """`wikivel-bot --help`, `status` and `review` must not pay for torch at start-up."""
    code = (
        "import sys, wikivel_bot.cli;"
        "bad = [m for m in ('torch', 'open_clip', 'pywikibot') if m in sys.modules];"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == ""
