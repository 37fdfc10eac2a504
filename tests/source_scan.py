"""Reading the package's own source for the "only one module does X" guards
(tests/test_one_of_each.py, tests/test_one_wikidata_client.py): the modules, and the string
constants of code with docstrings left out (prose may name what code must not do)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator, Set, Tuple

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "wikivel_bot"


def package_modules() -> Iterator[Tuple[str, str]]:
    """(path relative to the repository, source) of every module of ``wikivel_bot``."""
    for path in sorted(PACKAGE.rglob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")


def docstring_ids(tree: ast.AST) -> Set[int]:
    """ids of the docstring nodes of a module, its classes and functions (prose, not code)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def code_constants(tree: ast.AST) -> Iterator[ast.Constant]:
    """The str and bytes constants of code (f-string pieces included, docstrings left out)."""
    prose = docstring_ids(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and id(node) not in prose:
            yield node
