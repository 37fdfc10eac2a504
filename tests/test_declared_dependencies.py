"""Every import's distribution is declared in setup.cfg, in the extra of the command that needs it.

Read from the source (AST) and the installed metadata, without a venv per extra:

1. every third-party module imported anywhere in ``wikivel_bot`` (inside functions too) comes
   from a distribution in ``install_requires`` or in an extra;
2. each ``cli/*.py`` module imports at module level — through ``wikivel_bot``'s own
   module-level imports, to the end — only what ``install_requires`` and the extras its
   commands name in their ``--help`` (``Needs: pip install 'wikivel-bot[ml]'``, from
   ``cli/extras.py``) provide, so ``--help`` works on that install;
3. each command's own lazy imports (in its function and the helpers of its module it calls),
   followed the same way, need only those too. An optional import (under ``except
   ImportError``) anywhere in a module the command reaches counts as needed: the command's
   output depends on it (``report``'s figures and matplotlib).

Imports inside the library's functions are not followed from a command (which function runs
depends on the options); test 1 still holds them to setup.cfg. A failure names the module, the
import and the extra that is missing.
"""

from __future__ import annotations

import ast
import configparser
import functools
import importlib.metadata
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

import click

from wikivel_bot.cli import main

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "wikivel_bot"
SETUP_CFG = ROOT / "setup.cfg"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_NEEDS = re.compile(r"wikivel-bot\[([a-z0-9_,-]+)\]")
_IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError"}


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them (``open_clip_torch`` = ``open-clip-torch``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


# -- setup.cfg and the installed distributions ------------------------------------------------

@dataclass(frozen=True)
class Declared:
    """What setup.cfg declares: the base install and each extra, as canonical names."""

    base: frozenset
    extras: Mapping[str, frozenset]

    def extras_providing(self, dist: str) -> List[str]:
        return sorted(name for name, dists in self.extras.items() if dist in dists)

    def provided(self, extras: Iterable[str]) -> Set[str]:
        out = set(self.base)
        for name in extras:
            out |= self.extras.get(name, frozenset())
        return out


def read_declared(setup_cfg: Path) -> Declared:
    """``install_requires`` and ``extras_require`` of ``setup_cfg`` (``%(ml)s`` expanded)."""
    config = configparser.ConfigParser()
    config.read(setup_cfg, encoding="utf-8")

    def names(value: str) -> frozenset:
        found = (_NAME.match(line.strip()) for line in value.splitlines() if line.strip())
        return frozenset(canonical(m.group(0)) for m in found if m)

    section = "options.extras_require"
    extras = {name: names(config.get(section, name)) for name in config.options(section)} \
        if config.has_section(section) else {}
    return Declared(base=names(config.get("options", "install_requires", fallback="")), extras=extras)


@functools.lru_cache(maxsize=None)
def distributions() -> Mapping[str, List[str]]:
    """Top-level import name -> the installed distributions providing it (canonical names)."""
    return {top: [canonical(d) for d in dists]
            for top, dists in importlib.metadata.packages_distributions().items()}


def is_third_party(top: str, package: str) -> bool:
    return top not in sys.stdlib_module_names and top not in (package, "__future__")


# -- imports in the source ---------------------------------------------------------------------

@dataclass(frozen=True)
class Site:
    """One imported name: where (module, line), what (dotted name), and whether it sits
    under ``except ImportError`` (optional) or inside a function (lazy)."""

    module: str
    line: int
    name: str
    optional: bool
    lazy: bool

    @property
    def top(self) -> str:
        return self.name.split(".")[0]

    def where(self) -> str:
        return f"{self.module}:{self.line}"


class Source:
    """The modules of one package, parsed once: names, files, import sites."""

    def __init__(self, package_dir: Path) -> None:
        self.package = package_dir.name
        root = package_dir.parent
        self.paths: Dict[str, Path] = {}
        for path in sorted(package_dir.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            self.paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
        self.trees = {name: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
                      for name, path in self.paths.items()}

    def own(self, dotted: str) -> Optional[str]:
        """The module of this package that ``dotted`` names or is inside, else None."""
        while dotted and dotted not in self.paths:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    def sites(self, module: str, nodes: Optional[Sequence[ast.AST]] = None) -> Iterator[Site]:
        """The import sites of ``module`` (or of ``nodes``, statements of it)."""
        tree = self.trees[module]
        optional = _optional_imports(tree)
        lazy = _lazy_imports(tree)
        is_package = self.paths[module].name == "__init__.py"
        for top in nodes if nodes is not None else [tree]:
            for node in ast.walk(top):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:
                        anchor = module.split(".") if is_package else module.split(".")[:-1]
                        anchor = anchor[:len(anchor) - (node.level - 1)]
                        base = ".".join(anchor + ([base] if base else []))
                    names = [f"{base}.{a.name}" if f"{base}.{a.name}" in self.paths else base for a in node.names]
                else:
                    continue
                for name in names:
                    yield Site(module, node.lineno, name, id(node) in optional, id(node) in lazy)


def _optional_imports(tree: ast.AST) -> Set[int]:
    """ids of the import nodes in the body of a ``try`` that catches ImportError."""
    out: Set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            handler.type is not None and any(isinstance(n, ast.Name) and n.id in _IMPORT_ERRORS
                                             for n in ast.walk(handler.type))
            for handler in node.handlers
        ):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return out


def _lazy_imports(tree: ast.AST) -> Set[int]:
    """ids of the import nodes inside a function (run when it is called, not at import) or
    under ``if TYPE_CHECKING:`` (read by mypy, never run)."""
    lazy = {id(n) for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            lazy |= {id(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return lazy


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


@dataclass(frozen=True)
class Reached:
    """A third-party import a start reaches, and the chain of our modules that leads to it."""

    site: Site
    via: Tuple[str, ...]
    optional: bool


def reach(source: Source, starts: Iterable[Tuple[str, bool]], *, optional_anywhere: bool,
          via: Tuple[str, ...] = ()) -> List[Reached]:
    """The third-party imports that running the ``starts`` (module, optional) imports
    (``via``: the modules that import the starts, for the messages).

    Our modules are followed through their module-level imports, and through their parent
    packages (Python runs those first). Under ``except ImportError`` an import is optional, and
    so is everything it reaches. ``optional_anywhere`` also counts optional imports inside a
    reached module's functions.
    """
    found: List[Reached] = []
    best: Dict[str, bool] = {}  # module -> reached optionally only
    todo: List[Tuple[str, bool, Tuple[str, ...]]] = [(m, opt, via) for m, opt in starts]
    while todo:
        module, optional, via = todo.pop()
        if module in best and (not best[module] or optional):
            continue
        best[module] = optional
        parts = module.split(".")
        todo += [(".".join(parts[:i]), optional, via + (module,)) for i in range(1, len(parts))]
        for site in source.sites(module):
            if site.lazy and not (optional_anywhere and site.optional):
                continue
            now_optional = optional or site.optional
            target = source.own(site.name) if site.top == source.package else None
            if target is not None:
                if target != module:
                    todo.append((target, now_optional, via + (module,)))
            elif is_third_party(site.top, source.package):
                found.append(Reached(site, via + (module,), now_optional))
    return found


# -- the three checks ----------------------------------------------------------------------------

def undeclared_imports(source: Source, declared: Declared) -> List[str]:
    """Check 1: a line per imported third-party module whose distribution setup.cfg lacks."""
    everything = declared.provided(declared.extras)
    problems = []
    for module in source.paths:
        for site in source.sites(module):
            if not is_third_party(site.top, source.package):
                continue
            dists = distributions().get(site.top)
            if not dists:
                problems.append(f"{site.where()}: import {site.name}: no installed distribution provides "
                                f"{site.top!r}, so its declaration cannot be checked")
            elif not set(dists) & everything:
                problems.append(f"{site.where()}: import {site.name}: its distribution {dists[0]} is in neither "
                                f"install_requires nor any extra of setup.cfg")
    return sorted(set(problems))


def missing_extras(what: str, found: Iterable[Reached], extras: Sequence[str], declared: Declared) -> List[str]:
    """A line per import in ``found`` that install_requires + ``extras`` do not provide."""
    allowed = declared.provided(extras)
    named = ", ".join(f"[{e}]" for e in extras) or "no extra"
    problems = []
    for reached in found:
        dists = distributions().get(reached.site.top, [canonical(reached.site.top)])
        if set(dists) & allowed:
            continue
        providers = sorted({e for d in dists for e in declared.extras_providing(d)})
        need = " or ".join(f"[{e}]" for e in providers) if providers else "an extra (none declares it)"
        chain = " -> ".join(reached.via)
        kind = "optional import" if reached.optional else "import"
        problems.append(f"{what}: {reached.site.where()} ({kind} {reached.site.name}, via {chain}) needs "
                        f"extra {need}, but it names {named}")
    return sorted(set(problems))


def documented_extras(command: click.Command, parents: Sequence[click.Command] = ()) -> List[str]:
    """The extras a command's help (or a parent group's) names as ``wikivel-bot[...]``."""
    text = " ".join((c.help or "") for c in [*parents, command])
    return sorted({e for group in _NEEDS.findall(text) for e in group.split(",")})


def commands(group: click.Group, path: Tuple[str, ...] = (), parents: Tuple[click.Command, ...] = ()
             ) -> Iterator[Tuple[str, click.Command, Tuple[click.Command, ...]]]:
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from commands(command, path + (name,), parents + (command,))
        if command.callback is not None:
            yield " ".join(path + (name,)), command, parents


def command_function(source: Source, command: click.Command) -> Tuple[str, ast.AST]:
    """(module, function node) of a command's callback, unwrapped from click's decorators."""
    assert command.callback is not None
    function = inspect.unwrap(command.callback)
    module = function.__module__
    first = function.__code__.co_firstlineno
    for node in ast.walk(source.trees[module]):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function.__name__ \
                and min([d.lineno for d in node.decorator_list] + [node.lineno]) == first:
            return module, node
    raise AssertionError(f"cannot find {function.__qualname__} in {module}")


def lazy_starts(source: Source, module: str, function: ast.AST) -> List[Tuple[str, bool]]:
    """The imports a command function makes when it runs, in it and in the functions of its
    own module it calls by name (as (module, optional); third-party names as themselves)."""
    helpers = {n.name: n for n in source.trees[module].body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    todo, seen, starts = [function], set(), []
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        starts += [(site.name, site.optional) for site in source.sites(module, [node])]
        todo += [helpers[c.func.id] for c in ast.walk(node)
                 if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in helpers]
    return starts


def command_reach(source: Source, module: str, function: ast.AST) -> List[Reached]:
    """Check 3's imports: the command module, and what the command's function imports."""
    ours: List[Tuple[str, bool]] = []
    found: List[Reached] = reach(source, [(module, False)], optional_anywhere=True)
    for name, optional in lazy_starts(source, module, function):
        target = source.own(name) if name.split(".")[0] == source.package else None
        if target is not None:
            ours.append((target, optional))
        elif is_third_party(name.split(".")[0], source.package):
            found.append(Reached(Site(module, getattr(function, "lineno", 0), name, optional, True),
                                 (module,), optional))
    return found + reach(source, ours, optional_anywhere=True, via=(module,))


@functools.lru_cache(maxsize=None)
def package_source() -> Source:
    return Source(PACKAGE)


# -- the tests ------------------------------------------------------------------------------------

def test_every_third_party_import_is_declared_in_setup_cfg() -> None:
    problems = undeclared_imports(package_source(), read_declared(SETUP_CFG))
    assert not problems, "imports setup.cfg does not declare:\n" + "\n".join(problems)


def test_command_modules_import_at_module_level_only_what_their_commands_declare() -> None:
    source, declared = package_source(), read_declared(SETUP_CFG)
    named: Dict[str, Set[str]] = {}
    for _path, command, parents in commands(main):
        module, _ = command_function(source, command)
        named.setdefault(module, set()).update(documented_extras(command, parents))
    problems = []
    for module in sorted(m for m in source.paths if m.startswith("wikivel_bot.cli.")):
        found = [r for r in reach(source, [(module, False)], optional_anywhere=False) if not r.optional]
        problems += missing_extras(module, found, sorted(named.get(module, ())), declared)
    assert not problems, "module-level imports beyond the declared extras:\n" + "\n".join(problems)


def test_each_command_needs_only_the_extras_its_help_names() -> None:
    source, declared = package_source(), read_declared(SETUP_CFG)
    problems = []
    for path, command, parents in commands(main):
        module, function = command_function(source, command)
        problems += missing_extras(f"`wikivel-bot {path}`", command_reach(source, module, function),
                                   documented_extras(command, parents), declared)
    assert not problems, "commands that need an extra their --help does not name:\n" + "\n".join(problems)


def test_every_documented_extra_exists() -> None:
    declared = read_declared(SETUP_CFG)
    for path, command, parents in commands(main):
        for extra in documented_extras(command, parents):
            assert extra in declared.extras, f"`wikivel-bot {path}` names [{extra}], which setup.cfg does not declare"


def test_the_checks_name_the_module_the_import_and_the_extra(tmp_path: Path) -> None:
    package = tmp_path / "toy"
    (package / "cli").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "plots.py").write_text(
        "def draw():\n    try:\n        import matplotlib\n    except ImportError:\n        return None\n")
    (package / "cli" / "__init__.py").write_text("import click\n")
    (package / "cli" / "report.py").write_text(
        "import click\nfrom toy import plots, hints\n\n\ndef report():\n    from toy import plots as p\n    p.draw()\n")
    (package / "engine.py").write_text("import sqlalchemy\n")
    # Read by mypy only: never run, so not reached from report's module level.
    (package / "hints.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import matplotlib\n")
    cfg = tmp_path / "setup.cfg"
    cfg.write_text("[options]\ninstall_requires =\n    click\n\n[options.extras_require]\n"
                   "report =\n    matplotlib\n")
    source, declared = Source(package), read_declared(cfg)

    assert undeclared_imports(source, declared) == [
        "toy.engine:1: import sqlalchemy: its distribution sqlalchemy is in neither install_requires "
        "nor any extra of setup.cfg"]
    function = next(n for n in ast.walk(source.trees["toy.cli.report"]) if isinstance(n, ast.FunctionDef))
    found = command_reach(source, "toy.cli.report", function)
    assert missing_extras("`toy report`", found, [], declared) == [
        "`toy report`: toy.plots:3 (optional import matplotlib, via toy.cli.report -> toy.plots) needs "
        "extra [report], but it names no extra"]
    assert missing_extras("`toy report`", found, ["report"], declared) == []
    # At module level the optional import inside a function is not reached: --help works.
    at_import = reach(source, [("toy.cli.report", False)], optional_anywhere=False)
    assert sorted((r.site.where(), r.site.name) for r in at_import) == [
        ("toy.cli.report:1", "click"), ("toy.cli:1", "click")]


# -- a missing extra is one line naming it -------------------------------------------------------

def test_each_module_the_cli_names_is_installed_by_the_extra_it_names() -> None:
    """The one-line "needs the 'X' extra" of the CLI edge names the extra that installs it."""
    from wikivel_bot.cli.errors import EXTRA_OF_MODULE

    declared, dists = read_declared(SETUP_CFG), distributions()
    wrong = []
    for module, extra in sorted(EXTRA_OF_MODULE.items()):
        provided = {canonical(d) for d in dists.get(module, [])}
        if not provided & declared.extras.get(extra, frozenset()):
            wrong.append(f"{module}: {extra!r} installs none of {sorted(provided) or 'its distributions'}")
    assert not wrong, "\n".join(wrong)


def test_a_command_whose_extra_is_missing_says_which_in_one_line(tmp_path: Path, monkeypatch) -> None:
    """`backfill` on an image without the backfill extra: one line naming it, no traceback."""
    from click.testing import CliRunner

    monkeypatch.chdir(tmp_path)
    for name in [m for m in sys.modules if m == "ray" or m.startswith("ray.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails as if not installed
    titles = tmp_path / "titles.txt"
    titles.write_text("File:Red apple.png\n")
    result = CliRunner().invoke(main, ["backfill", "--titles", str(titles), "--weights", "random"])
    assert isinstance(result.exception, SystemExit) and result.exit_code == 1, result.exception  # not a crash
    lines = result.output.strip().splitlines()
    assert lines == ["error: this command needs the 'backfill' extra, and ray is not installed: "
                     "pip install 'wikivel-bot[backfill]'"], result.output
