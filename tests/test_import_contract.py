"""The dependency direction of HOUSE_STYLE.md, checked on the source rather than by memory.

types/errors ← core ← everything else; torch only in linker/ and train/; pywikibot only in
commons/; SQLAlchemy/Alembic only in queue/ (its migrations/ included); click only in cli/. Imports
inside functions count too: a lazy import still drags the package in when it runs.

Between our own modules: the import graph of ``wikivel_bot`` has no cycle at all, and the
linker room keeps its floors (docs/architecture.md): ``backbone/`` at the bottom, the contract
(``base``, ``spec``...) above it, the implementations above that, the ``cascade/`` sub-room
above the CLIP linker it uses, and ``factory`` on top, imported by nothing below it.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "wikivel_bot"

# third-party top-level name -> the subpackages (relative to wikivel_bot) allowed to import it
RESTRICTED: Dict[str, Tuple[str, ...]] = {
    # The offline evaluation that runs models (evaluation/runs/) loads checkpoints; the
    # metrics floor of evaluation/ below it stays free of torch.
    "torch": ("linker", "train", "evaluation.runs"),
    "torchvision": ("linker", "train", "evaluation.runs"),
    "open_clip": ("linker", "train", "evaluation.runs"),
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


# -- the graph of our own modules -------------------------------------------------------------

def module_name(path: Path, root: Path) -> str:
    """``wikivel_bot/linker/__init__.py`` -> ``wikivel_bot.linker``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path) -> Dict[str, Set[str]]:
    """Module -> the modules of ``package`` it imports (at the top or inside a function).

    ``from a.b import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b`` (the
    name is defined there); relative imports are resolved. A module's parent packages, which
    Python also runs, are not counted: a package's ``__init__`` is its front door, and the
    rules below keep the modules inside from importing it.
    """
    root = package.parent
    paths = {module_name(path, root): path for path in sorted(package.rglob("*.py"))}
    graph: Dict[str, Set[str]] = {}
    for name, path in paths.items():
        is_package = path.name == "__init__.py"
        deps: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in paths:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    deps.add(target)
        graph[name] = deps
    return graph


@functools.lru_cache(maxsize=None)
def package_graph() -> Dict[str, Set[str]]:
    """:func:`import_graph` of ``wikivel_bot``, parsed once for every test below (read only)."""
    return import_graph(PACKAGE)


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One import cycle as ``[a, b, ..., a]``, or None (depth-first, iterative)."""
    state: Dict[str, int] = {}  # 1 on the current path, 2 finished
    for start in sorted(graph):
        if start in state:
            continue
        path: List[str] = [start]
        todo: List[Iterator[str]] = [iter(sorted(graph[start]))]
        state[start] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                todo.append(iter(sorted(graph.get(nxt, ()))))
    return None


def subpackage(path: Path) -> str:
    """``wikivel_bot/evaluation/runs/cascade.py`` -> ``evaluation.runs.cascade``."""
    return ".".join(path.relative_to(PACKAGE).with_suffix("").parts)


def is_inside(where: str, rooms: Tuple[str, ...]) -> bool:
    """Whether the module ``where`` (relative, dotted) lies in one of ``rooms`` (or is one)."""
    return any(where == room or where.startswith(room + ".") for room in rooms)


def python_files() -> Iterator[Path]:
    yield from sorted(PACKAGE.rglob("*.py"))


def test_restricted_libraries_stay_in_their_layer() -> None:
    problems = []
    for path in python_files():
        where = subpackage(path)
        for module, line in imports(path):
            top = module.split(".")[0]
            allowed = RESTRICTED.get(top)
            if allowed is not None and not is_inside(where, allowed):
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


# The wikidata room is a floor below labels/, linker/, review/, web/ and commons/: of ours it
# may use only these (the root package for __version__), and of the world only HTTP.
WIKIDATA_ALLOWED_INTERNAL = ("wikivel_bot.types", "wikivel_bot.errors", "wikivel_bot.core", "wikivel_bot.wikidata")
WIKIDATA_ALLOWED_EXTERNAL = ("requests", "urllib3")


def wikidata_room_problems(room: Path) -> List[str]:
    stdlib: Set[str] = set(sys.stdlib_module_names) | {"__future__"}
    problems = []
    for path in sorted(room.rglob("*.py")):
        for module, line in imports(path):
            top = module.split(".")[0]
            if top == "wikivel_bot":
                if module != "wikivel_bot" and not module.startswith(WIKIDATA_ALLOWED_INTERNAL):
                    problems.append(f"{path.name}:{line} imports {module}")
            elif top not in stdlib and top not in WIKIDATA_ALLOWED_EXTERNAL:
                problems.append(f"{path.name}:{line} imports {module}")
    return problems


def test_the_wikidata_room_stands_on_types_errors_and_core_only() -> None:
    problems = wikidata_room_problems(PACKAGE / "wikidata")
    assert not problems, "wikidata/ must stay below its users:\n" + "\n".join(problems)


def test_the_wikidata_rule_catches_a_climb(tmp_path: Path) -> None:
    (tmp_path / "client.py").write_text("import requests\nfrom wikivel_bot.labels import entities\n"
                                        "def f():\n    import pywikibot\n")
    assert wikidata_room_problems(tmp_path) == ["client.py:2 imports wikivel_bot.labels",
                                                "client.py:4 imports pywikibot"]


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


def test_the_import_graph_has_no_cycle() -> None:
    """No module imports (through any chain, lazily or not) a module that imports it back.

    When two modules need each other, the shared piece moves down a floor (HOUSE_STYLE 14).
    """
    cycle = find_cycle(package_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_cycle_finder_sees_a_cycle_through_a_lazy_and_a_relative_import(tmp_path: Path) -> None:
    """The finder itself must see cycles (or the test above proves nothing)."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("from . import c\n")
    (pkg / "sub" / "c.py").write_text("def f():\n    from pkg.a import thing\n")
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.sub.b"} and graph["pkg.sub.b"] == {"pkg.sub.c"}
    assert find_cycle(graph) == ["pkg.a", "pkg.sub.b", "pkg.sub.c", "pkg.a"]
    (pkg / "sub" / "c.py").write_text("def f():\n    return 1\n")
    assert find_cycle(import_graph(pkg)) is None


# Packages whose __init__ is more than a front door, and may be imported from inside: the root
# holds only ``__version__``; ``cli``'s holds the click group that ``cli.docs`` renders.
FRONT_DOOR_EXCEPTIONS = ("wikivel_bot", "wikivel_bot.cli")


def test_no_module_imports_the_front_door_of_its_own_package() -> None:
    """A sub-room's modules import each other, never the __init__ that re-exports them: that
    way the front door can import the whole room without closing a circle (queue/store,
    config, linker, its backbone and cascade)."""
    graph = package_graph()
    packages = {module_name(path, PACKAGE.parent) for path in PACKAGE.rglob("__init__.py")}
    problems = [f"{m} imports {d}" for m, deps in sorted(graph.items()) for d in sorted(deps)
                if d in packages and m.startswith(d + ".") and d not in FRONT_DOOR_EXCEPTIONS]
    assert not problems, "\n".join(problems)


# -- the linker room's floors -----------------------------------------------------------------

LINKER = "wikivel_bot.linker"
# Top floor first. A linker module may import linker modules on its own floor or below, never
# above; the package's __init__ (the front door that re-exports the public names) stands
# outside the floors and nothing in the room imports it.
# A room's floors, top first: (floor name, the first names under the room on that floor).
Floors = Tuple[Tuple[str, Tuple[str, ...]], ...]
LINKER_FLOORS: Floors = (
    ("factory", ("factory", "parity")),
    ("cascade", ("cascade",)),
    ("implementations", ("clip", "clip_backbone", "baselines", "checkpoint", "link", "evidence_link", "learned")),
    ("contract", ("base", "spec", "texts", "heads", "index", "search", "evidence_model")),
    ("backbone", ("backbone",)),
)


def floor_of(module: str, room: str, floors: Floors, name: str) -> int:
    """The floor of a module of ``room`` (0 = top), by the first name under the room; fails
    for a module on no floor of ``floors`` (called ``name`` in the message)."""
    first = module[len(room) + 1:].split(".")[0]
    for number, (_, members) in enumerate(floors):
        if first in members:
            return number
    raise AssertionError(f"{module} is on no floor of {name}: give it one (and a row in docs/architecture.md)")


def linker_floor(module: str) -> int:
    """The floor of a module of the linker room (0 = top); fails for a module on no floor."""
    return floor_of(module, LINKER, LINKER_FLOORS, "LINKER_FLOORS")


def linker_modules(graph: Dict[str, Set[str]]) -> List[str]:
    return sorted(m for m in graph if m.startswith(LINKER + "."))


def test_every_linker_module_has_a_floor() -> None:
    for module in linker_modules(package_graph()):
        linker_floor(module)


def floor_problems(graph: Dict[str, Set[str]]) -> List[str]:
    """Every import in the linker room that goes up a floor or through the front door."""
    problems = []
    for module in linker_modules(graph):
        for dep in sorted(graph[module]):
            if dep == LINKER:
                problems.append(f"{module} imports the package front door {LINKER}: import the module itself")
            elif dep.startswith(LINKER + ".") and linker_floor(dep) < linker_floor(module):
                problems.append(f"{module} ({LINKER_FLOORS[linker_floor(module)][0]}) imports {dep} "
                                f"({LINKER_FLOORS[linker_floor(dep)][0]}), a floor above it")
    return problems


def test_linker_imports_go_down_the_floors_only() -> None:
    problems = floor_problems(package_graph())
    assert not problems, "linker floors broken:\n" + "\n".join(problems)


def test_nothing_below_the_factory_imports_it() -> None:
    graph = package_graph()
    importers = sorted(m for m in linker_modules(graph) if f"{LINKER}.factory" in graph[m])
    assert importers == [f"{LINKER}.parity"], importers


def test_the_backbone_imports_nothing_of_the_linker_outside_itself() -> None:
    """The backbone can be read, benchmarked and replaced on its own."""
    graph = package_graph()
    problems = [f"{m} imports {d}" for m in linker_modules(graph) if m.startswith(f"{LINKER}.backbone")
                for d in sorted(graph[m]) if d.startswith(LINKER) and not d.startswith(f"{LINKER}.backbone")]
    assert not problems, "\n".join(problems)


def test_only_the_factory_builds_from_the_cascade_room() -> None:
    """Inside the linker room, the cascade is reached through the factory alone."""
    graph = package_graph()
    outside = [m for m in linker_modules(graph) if not m.startswith(f"{LINKER}.cascade")]
    importers = sorted(m for m in outside if any(d.startswith(f"{LINKER}.cascade") for d in graph[m]))
    assert importers == [f"{LINKER}.factory"], importers


def test_the_floor_rule_catches_an_upward_import_and_the_front_door() -> None:
    """The floor check itself must see a wrong import (or the test above proves nothing)."""
    graph = {
        f"{LINKER}.backbone.encoders": {f"{LINKER}.clip"},   # up two floors
        f"{LINKER}.clip": {f"{LINKER}.backbone.encoders", LINKER},  # down: fine; the front door: not
        f"{LINKER}.spec": set(),
    }
    problems = floor_problems(graph)
    assert len(problems) == 2
    assert "backbone.encoders (backbone) imports wikivel_bot.linker.clip (implementations)" in problems[0]
    assert "front door" in problems[1]


# -- the learning room (learning from reviewers, docs/learning.md) -----------------------------

LEARNING = "wikivel_bot.learning"
# Who may use the room: the CLI and the daemon run it; the one factory asks only the stdlib
# registry which checkpoint runs (settings know nothing of models: config imports none of it).
LEARNING_USERS = ("wikivel_bot.cli", "wikivel_bot.daemon", "wikivel_bot.learning")
LEARNING_NEVER = ("wikivel_bot.cli", "wikivel_bot.daemon", "wikivel_bot.web", "wikivel_bot.review",
                  "wikivel_bot.backfill")


def learning_problems(graph: Dict[str, Set[str]]) -> List[str]:
    problems = []
    for module, deps in sorted(graph.items()):
        for dep in sorted(deps):
            if dep.startswith(LEARNING) and not module.startswith(LEARNING_USERS):
                if not (module == "wikivel_bot.linker.factory" and dep == f"{LEARNING}.registry"):
                    problems.append(f"{module} imports {dep}: only the CLI and the daemon use the learning room")
            if module.startswith(LEARNING) and dep.startswith(LEARNING_NEVER):
                problems.append(f"{module} imports {dep}, a room above it")
    registry_deps = graph.get(f"{LEARNING}.registry", set())
    # core is standard library only: the factory asks the registry without loading more.
    problems += [f"{LEARNING}.registry imports {d} (the factory reads it: standard library, core and errors only)"
                 for d in sorted(registry_deps) if d != "wikivel_bot.errors" and not d.startswith("wikivel_bot.core.")]
    return problems


def test_the_learning_room_sits_between_its_tools_and_its_users() -> None:
    problems = learning_problems(package_graph())
    assert not problems, "\n".join(problems)


def test_the_learning_rule_catches_a_climb() -> None:
    graph = {f"{LEARNING}.cycle": {"wikivel_bot.cli.context"}, "wikivel_bot.web.app": {f"{LEARNING}.judge"},
             f"{LEARNING}.registry": {"wikivel_bot.queue.store"},
             # settings read no models any more: the arrow that ran up four floors is refused
             "wikivel_bot.config.loading": {f"{LEARNING}.registry"}}
    assert len(learning_problems(graph)) == 4


# -- the training room's floors, offline evaluation's home, the writer's and the daemon's rooms ---

TRAIN = "wikivel_bot.train"
# Top floor first, as in LINKER_FLOORS: a train module imports train modules on its own floor or
# below. Learning from decisions on top (it fits the cascade's pair model and Naive CLIP's
# heads); the dataset at the bottom (pure: building and reading it needs no model).
TRAIN_FLOORS: Floors = (
    ("decisions", ("decisions",)),
    ("cascade and synthetic sets", ("cascade", "synthetic")),
    ("fitting loop and evidence model", ("fitting", "evidence")),
    ("dataset", ("data",)),
)


def train_floor(module: str) -> int:
    """The floor of a module of the training room (0 = top); fails for a module in no sub-room."""
    return floor_of(module, TRAIN, TRAIN_FLOORS, "TRAIN_FLOORS")


def train_problems(graph: Dict[str, Set[str]]) -> List[str]:
    """Every import of the training room that goes up a floor, through its front door, or out
    to what evaluates or decides (evaluation's model runs, the learning room)."""
    problems = []
    for module in sorted(m for m in graph if m.startswith(TRAIN + ".")):
        for dep in sorted(graph[module]):
            if dep == TRAIN:
                problems.append(f"{module} imports the front door {TRAIN}: import the module itself")
            elif dep.startswith(TRAIN + ".") and train_floor(dep) < train_floor(module):
                problems.append(f"{module} ({TRAIN_FLOORS[train_floor(module)][0]}) imports {dep} "
                                f"({TRAIN_FLOORS[train_floor(dep)][0]}), a floor above it")
            elif dep.startswith(("wikivel_bot.evaluation.runs", LEARNING, "wikivel_bot.cli", "wikivel_bot.daemon")):
                problems.append(f"{module} imports {dep}, a room that uses the training room")
    return problems


def test_every_train_module_is_in_a_sub_room() -> None:
    """Nothing lies loose in train/ but its front door: each concern has its room."""
    for module in package_graph():
        if module.startswith(TRAIN + "."):
            train_floor(module)


def test_train_imports_go_down_its_floors_only() -> None:
    problems = train_problems(package_graph())
    assert not problems, "training room broken:\n" + "\n".join(problems)


def test_the_train_rule_catches_a_climb() -> None:
    graph = {f"{TRAIN}.data.dataset": {f"{TRAIN}.fitting.loop"},                  # up a floor
             f"{TRAIN}.fitting.loop": {f"{TRAIN}.data.dataset", TRAIN},           # down: fine; front door: not
             f"{TRAIN}.cascade.fit": {"wikivel_bot.evaluation.runs.checkpoint"},  # out to what evaluates it
             f"{TRAIN}.evidence.fit": {"wikivel_bot.evaluation.scoring"}}         # the metrics floor: fine
    problems = train_problems(graph)
    assert len(problems) == 3, problems
    with pytest.raises(AssertionError, match="no floor"):
        train_floor(f"{TRAIN}.loose_module")


EVALUATION = "wikivel_bot.evaluation"


def evaluation_problems(graph: Dict[str, Set[str]]) -> List[str]:
    """Offline evaluation has one home in two floors: the metrics (scoring, JSONL, tables, the
    human-evaluation kit; no model, no torch) that training and the community trial use, and
    ``runs/`` above them, which loads models and datasets and is used only by the CLI."""
    problems = []
    for module, deps in sorted(graph.items()):
        for dep in sorted(deps):
            in_runs = dep.startswith(EVALUATION + ".runs")
            if in_runs and not module.startswith((EVALUATION + ".runs", "wikivel_bot.cli")):
                problems.append(f"{module} imports {dep}: only the CLI runs models to evaluate them")
            if (module.startswith(EVALUATION) and not module.startswith(EVALUATION + ".runs")
                    and dep.startswith(("wikivel_bot.train", "wikivel_bot.linker", EVALUATION + ".runs"))):
                problems.append(f"{module} imports {dep}: the metrics floor runs no model")
    return problems


def test_offline_evaluation_has_one_home_in_two_floors() -> None:
    problems = evaluation_problems(package_graph())
    assert not problems, "\n".join(problems)


def test_the_evaluation_rule_catches_a_climb() -> None:
    graph = {f"{EVALUATION}.scoring": {"wikivel_bot.linker.factory"},
             f"{TRAIN}.fitting.validate": {f"{EVALUATION}.runs.checkpoint", f"{EVALUATION}.scoring"},
             f"{EVALUATION}.runs.checkpoint": {f"{TRAIN}.data.dataset", f"{EVALUATION}.scoring"},
             "wikivel_bot.cli.evaluate": {f"{EVALUATION}.runs.checkpoint"}}
    assert len(evaluation_problems(graph)) == 2


# Rooms that only their callers enter: (room, the modules that may import it from outside).
GUARDED_ROOMS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    # The writer: what a Commons community trusts or blocks. The rest of commons/ (the poller,
    # fetcher, evidence) never reaches into it; the CLI and the daemon run it.
    ("wikivel_bot.commons.writer", ("wikivel_bot.cli", "wikivel_bot.daemon")),
    # The daemon: started by `wikivel-bot run` alone.
    ("wikivel_bot.daemon", ("wikivel_bot.cli",)),
)


def guarded_room_problems(graph: Dict[str, Set[str]]) -> List[str]:
    problems = []
    for room, callers in GUARDED_ROOMS:
        for module, deps in sorted(graph.items()):
            if module == room or module.startswith(room + ".") or module.startswith(callers):
                continue
            problems += [f"{module} imports {dep}: only {', '.join(callers)} enter {room}"
                         for dep in sorted(deps) if dep == room or dep.startswith(room + ".")]
    return problems


def test_the_writer_and_the_daemon_are_entered_only_by_their_callers() -> None:
    problems = guarded_room_problems(package_graph())
    assert not problems, "\n".join(problems)


def test_the_guarded_room_rule_catches_a_side_door() -> None:
    graph = {"wikivel_bot.commons.fetcher": {"wikivel_bot.commons.writer.edit_send"},
             "wikivel_bot.web.app": {"wikivel_bot.daemon.scheduler"},
             "wikivel_bot.daemon.parts": {"wikivel_bot.commons.writer.loop"},
             "wikivel_bot.commons.writer.loop": {"wikivel_bot.commons.writer.statement_writer"}}
    assert len(guarded_room_problems(graph)) == 2


def test_the_moved_modules_left_nothing_behind() -> None:
    """train/ holds only its front door and sub-rooms; the daemon's and the writer's modules
    live in their rooms (a stale file at an old path would be importable and silently old)."""
    assert sorted(p.name for p in (PACKAGE / "train").glob("*.py")) == ["__init__.py"]
    assert not list(PACKAGE.glob("daemon*.py"))
    loose = {"writer.py", "write_loop.py", "edit_group.py", "edit_send.py", "one_shot.py", "follow_up.py",
             "revert.py", "write_outcomes.py", "stop_page.py"}
    assert not loose & {p.name for p in (PACKAGE / "commons").glob("*.py")}


# -- the web and the resident suggestion service ------------------------------------------------

# The web process serves the review page without the ML extras: it imports neither the linker
# (torch), nor the wiki's adapters (pywikibot), nor the learning room, nor the resident
# service that holds the linker. The CLI builds the service and hands it to create_app.
WEB = "wikivel_bot.web"
WEB_NEVER = ("wikivel_bot.linker", "wikivel_bot.commons", "wikivel_bot.learning", "wikivel_bot.resident",
             "wikivel_bot.daemon", "wikivel_bot.cli")
RESIDENT = "wikivel_bot.resident"
# The resident service sits above the linker and the wiki's readers, below the CLI and the web's
# caller: never the web, the CLI, the daemon, the learning room or the writer.
RESIDENT_NEVER = ("wikivel_bot.web", "wikivel_bot.cli", "wikivel_bot.daemon", "wikivel_bot.learning",
                  "wikivel_bot.commons.writer")


def web_and_resident_problems(graph: Dict[str, Set[str]]) -> List[str]:
    problems = []
    for module, deps in sorted(graph.items()):
        for dep in sorted(deps):
            if is_inside(module, (WEB,)) and is_inside(dep, WEB_NEVER):
                problems.append(f"{module} imports {dep}: the web gets the linker from the CLI (create_app(suggester=))")
            if is_inside(module, (RESIDENT,)) and is_inside(dep, RESIDENT_NEVER):
                problems.append(f"{module} imports {dep}, a room the resident service may not enter")
            if is_inside(dep, (RESIDENT,)) and not is_inside(module, (RESIDENT, "wikivel_bot.cli")):
                problems.append(f"{module} imports {dep}: only the CLI builds the resident service")
    return problems


def test_the_web_holds_no_linker_and_the_resident_service_no_web() -> None:
    problems = web_and_resident_problems(package_graph())
    assert not problems, "\n".join(problems)


def test_the_web_and_resident_rule_catches_a_climb() -> None:
    graph = {"wikivel_bot.web.suggest": {"wikivel_bot.linker.factory", "wikivel_bot.queue.web_queries"},
             "wikivel_bot.web.app": {"wikivel_bot.resident.service"},
             "wikivel_bot.resident.service": {"wikivel_bot.web.context", "wikivel_bot.linker"},
             "wikivel_bot.daemon.parts": {"wikivel_bot.resident.service"},
             "wikivel_bot.cli.resident": {"wikivel_bot.resident.service"}}
    # web.app's import breaks both rules (the web holds no linker; only the CLI builds the service).
    assert len(web_and_resident_problems(graph)) == 5
