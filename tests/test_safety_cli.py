"""The safety rules as the CLI shows them: ``suggest`` lists what it withheld and why, and
``suggest``/``status`` name a switched-off rule. Real click group, real label-set artifact,
tiny open_clip model with random weights (the scores mean nothing, the rules do)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from tests.linker_support import TINY_MODEL, image_bytes, tiny_model_file  # noqa: E402
from tests.safety_support import LABELS, PEOPLE_QIDS  # noqa: E402
from wikivel_bot.cli import main  # noqa: E402
from wikivel_bot.core.safety import PEOPLE, SENSITIVE  # noqa: E402
from wikivel_bot.labels import write_label_set  # noqa: E402

TINY = ["--model", TINY_MODEL, "--weights", "random", "--device", "cpu", "--top", "100"]
OFF = "safety.withhold_people = false"


@pytest.fixture(scope="module")
def labels_dir(tmp_path_factory) -> str:
    return str(write_label_set(LABELS, tmp_path_factory.mktemp("labels") / "safety"))


@pytest.fixture
def run(tmp_path, monkeypatch):
    tiny_model_file()
    for name in ("WIKIVEL_SAFETY_WITHHOLD_PEOPLE", "WIKIVEL_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("WIKIVEL_LINKER_CACHE_DIR", str(tmp_path / "cache"))
    # Every scored item reaches the safety rules: no threshold, specific items always win.
    monkeypatch.setenv("WIKIVEL_LINKER_MIN_SCORE", "-2")
    monkeypatch.setenv("WIKIVEL_LINKER_ANCESTOR_MARGIN", "3")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str, env=None):
        return runner.invoke(main, list(args), catch_exceptions=False, env=env)

    return invoke


@pytest.fixture
def photo(tmp_path) -> Path:
    path = tmp_path / "DSC_0042.jpg"
    path.write_bytes(image_bytes())
    return path


def test_suggest_json_counts_what_was_withheld_and_names_it_only_when_asked(run, photo, labels_dir):
    # A description that names a person is not evidence (a category, link or identifier
    # tying the file to the item is: tests/test_safety_evidence.py): every person is withheld.
    args = ("suggest", str(photo), "--labels", labels_dir, "--json", *TINY, "--description", "Barack Obama at a rally")
    result = run(*args)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (file,) = doc["files"]
    suggested = {c["qid"]: c for c in file["candidates"]}
    assert not PEOPLE_QIDS & set(suggested)
    # Counts by rule only: no withheld item is named anywhere in the answer.
    assert file["withheld"] == {PEOPLE: 3, SENSITIVE: 5} and "withheld_items" not in file
    for qid in ("Q76", "Q5582", "Q7186", "Q190168", "Q5043", "Q1841", "Q9592", "Q900004"):
        assert f'"{qid}"' not in result.stdout
    # --show-withheld names them, for an operator who asks.
    shown = run(*args, "--show-withheld")
    assert shown.exit_code == 0, shown.output
    (file,) = json.loads(shown.stdout)["files"]
    assert file["withheld"] == {PEOPLE: 3, SENSITIVE: 5}
    withheld = {w["qid"]: w for w in file["withheld_items"]}
    assert withheld["Q5582"]["rule"] == PEOPLE and withheld["Q5582"]["label"] == "Vincent van Gogh"
    assert "no category, link or identifier of the file names it" in withheld["Q5582"]["reason"]
    assert withheld["Q76"]["rule"] == PEOPLE
    assert withheld["Q190168"]["rule"] == SENSITIVE
    assert doc["safety"]["withhold_people"] is True and doc["safety"]["switched_off"] == []
    assert "note" not in doc["safety"]  # the artifact stores instance-of data


def test_suggest_table_counts_withheld_and_names_them_only_with_show_withheld(run, photo, labels_dir):
    quiet = run("suggest", str(photo), "--labels", labels_dir, *TINY)
    assert quiet.exit_code == 0, quiet.output
    assert ("withheld by the safety rules: 3 named people, 5 sensitive classes "
            "(-v lists them; --show-withheld names them)") in quiet.stdout
    assert "Q5582" not in quiet.stdout and OFF not in quiet.stdout
    # -v: one line per withheld suggestion with its reason, still without the item.
    loud = run("suggest", "-v", str(photo), "--labels", labels_dir, *TINY)
    assert loud.exit_code == 0, loud.output
    assert "Q5582" not in loud.stdout and "Q1841" not in loud.stdout and "Catholicism" not in loud.stdout
    assert sum("named person: instance of Q5 (human), and no category, link or identifier of the file names it"
               in line
               for line in loud.stdout.splitlines()) == 3
    shown = run("suggest", "--show-withheld", str(photo), "--labels", labels_dir, *TINY)
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    (gogh,) = [line for line in lines if "Q5582 (Vincent van Gogh)" in line]
    assert "named person: instance of Q5 (human), and no category, link or identifier of the file names it" in gogh
    assert any("Q1841 (Catholicism)" in line and "under Q9174 (religion) (2 hops)" in line for line in lines)
    # Four hops down is under the class too: the closure has no hop ceiling.
    assert any("Q900004 (parish of four hops)" in line and "(4 hops)" in line for line in lines)


def test_a_switched_off_rule_is_named_by_suggest_and_status(run, photo, labels_dir, tmp_path):
    env = {"WIKIVEL_SAFETY_WITHHOLD_PEOPLE": "false"}
    table = run("suggest", str(photo), "--labels", labels_dir, *TINY, env=env)
    assert table.exit_code == 0, table.output
    assert f"WARNING: {OFF}: named people are suggested from the image alone" in table.stdout
    assert "named person" not in table.stdout.split("WARNING")[-1].split("\n", 1)[1]
    doc = json.loads(run("suggest", str(photo), "--labels", labels_dir, "--json", *TINY, env=env).stdout)
    assert doc["safety"]["withhold_people"] is False and OFF in doc["safety"]["switched_off"][0]
    assert PEOPLE_QIDS <= {c["qid"] for c in doc["files"][0]["candidates"]}
    db = {"WIKIVEL_DB_URL": f"sqlite:///{tmp_path / 'queue.sqlite'}"}
    assert run("db", "upgrade", env=db).exit_code == 0
    status = run("status", env={**db, **env})
    assert status.exit_code == 0, status.output
    assert "safety: named people NOT withheld (safety.withhold_people = false)" in status.stdout
    assert f"WARNING: {OFF}" in status.stdout
    on = run("status", env=db)
    assert "safety: named people withheld unless the file's evidence ties it to them" in on.stdout
    assert "WARNING" not in on.stdout
    doc = json.loads(run("status", "--json", env={**db, **env}).stdout)
    assert doc["safety"]["withhold_people"] is False
