"""How the suite is split over pytest-xdist workers (tests/conftest.py) stays true as tests move.

A module that joins the session's Ray but is missing from ``RAY_MODULES`` would start a second
Ray cluster on the other worker (three times slower on two cores); a name in ``SLOWEST_FIRST``
that no longer exists would silently stop being handed out first.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import RAY_MODULES, SLOWEST_FIRST, work_unit_of

TESTS = Path(__file__).resolve().parent


def test_every_module_that_joins_ray_is_one_unit_of_work() -> None:
    joins = sorted(p.name for p in TESTS.glob("test_*.py")
                   if p.name != Path(__file__).name and "ray_runtime" in p.read_text(encoding="utf-8"))
    assert joins and set(joins) <= set(RAY_MODULES), joins
    assert {work_unit_of(f"tests/{name}::test_x[sqlite-file]") for name in RAY_MODULES} == {"ray"}


def test_other_modules_are_units_of_their_own() -> None:
    assert work_unit_of("tests/test_writer.py::test_x") == "tests/test_writer.py"
    assert work_unit_of("tests/test_writer.py::Group::test_x[a::b]") == "tests/test_writer.py"


def test_the_slowest_first_list_names_existing_modules() -> None:
    missing = [name for name in SLOWEST_FIRST if name != "ray" and not (TESTS / name).is_file()]
    assert not missing, missing
    assert len(set(SLOWEST_FIRST)) == len(SLOWEST_FIRST)
