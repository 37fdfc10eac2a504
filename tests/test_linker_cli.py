"""`wikivel-bot suggest` and `wikivel-bot linkers` through the real click command group.

Label sets are real artifacts (wikivel_bot.labels) given with --labels, or the starter set;
one output-format test swaps in the in-memory set, whose direct counts make the expected
table easy to state.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from tests.linker_support import (  # noqa: E402
    TINY_MODEL,
    animals_label_set,
    image_bytes,
    tiny_model_file,
    write_animals_artifact,
)
from wikivel_bot.cli import main  # noqa: E402
from wikivel_bot.linker import list_linkers  # noqa: E402
from wikivel_bot.linker.backbone import weights as weights_module  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LABELS = animals_label_set()
TINY = ["--model", TINY_MODEL, "--weights", "random", "--device", "cpu"]


@pytest.fixture(scope="module")
def labels_dir(tmp_path_factory) -> str:
    return str(write_animals_artifact(tmp_path_factory.mktemp("labels") / "animals"))


@pytest.fixture
def run(tmp_path, monkeypatch):
    tiny_model_file()
    monkeypatch.setenv("WIKIVEL_LINKER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return invoke


@pytest.fixture
def photo(tmp_path) -> Path:
    path = tmp_path / "photo.jpg"
    path.write_bytes(image_bytes())
    return path


@pytest.mark.parametrize("name", [spec.name for spec in list_linkers()])
def test_suggest_runs_end_to_end_for_every_linker(run, photo, name, labels_dir):
    result = run("suggest", str(photo), "--linker", name, "--labels", labels_dir, "--top", "3", "--json", *TINY)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    (file,) = doc["files"]
    assert file["title"] == "photo.jpg" and file["ok"] is True
    assert 1 <= len(file["candidates"]) <= 3
    assert [c["rank"] for c in file["candidates"]] == list(range(1, len(file["candidates"]) + 1))
    assert all(c["qid"] in LABELS.qids for c in file["candidates"])
    assert doc["linker"]["name"] == name and doc["label_set"]["items"] == 12
    is_clip = name not in ("top-k", "random-freq")
    assert doc["random_weights"] is is_clip
    assert any("random weights" in w for w in doc["warnings"]) is is_clip


def test_suggest_uses_the_starter_label_set_by_default(run, photo):
    from wikivel_bot.labels import default_label_set

    result = run("suggest", str(photo), "--linker", "top-k", "--top", "3", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["label_set"]["hash"] == default_label_set("").content_hash
    assert len(doc["files"][0]["candidates"]) == 3


def test_suggest_table_names_random_weights_and_ranking_notes(run, photo, monkeypatch):
    monkeypatch.setattr("wikivel_bot.labels.default_label_set", lambda labels_dir: LABELS)
    result = run("suggest", str(photo), "--linker", "top-k", "--top", "3", "--depicts", "Q5")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    # The version names the set-up too (ranking and safety rules...: linker.factory).
    assert re.fullmatch(r"linker: top-k/v1 setup:[0-9a-f]{12} on cpu", lines[0]), lines[0]
    header = next(line for line in lines if "QID" in line)
    assert header.split()[:4] == ["rank", "QID", "label", "description"]
    rows = [line.split() for line in lines if line.strip().startswith(("1 ", "2 ", "3 "))]
    assert [row[1] for row in rows] == ["Q146", "Q144", "Q3947"]
    assert lines[-1].endswith("ancestor Q41176 (building) suppressed")

    result = run("suggest", str(photo), "--linker", "zero-shot", *TINY)
    assert result.exit_code == 0, result.output
    assert "WARNING: random weights" in result.stdout
    assert result.stdout.rstrip().endswith("(random weights: these suggestions are meaningless)")


def test_index_is_reused_by_a_second_suggest(run, photo, labels_dir):
    first = json.loads(run("suggest", str(photo), "--labels", labels_dir, "--json", *TINY).stdout)
    second = json.loads(run("suggest", str(photo), "--labels", labels_dir, "--json", *TINY).stdout)
    assert first["index"]["reused"] is False and second["index"]["reused"] is True
    assert first["files"] == second["files"]


def test_a_corrupt_file_is_reported_and_the_others_are_linked(run, photo, tmp_path, labels_dir):
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8\xff\xe0 truncated")
    result = run("suggest", str(broken), str(photo), "--labels", labels_dir, "--json", *TINY)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert [f["ok"] for f in doc["files"]] == [False, True]
    assert doc["files"][0]["reason"]
    assert doc["files"][1]["candidates"]


def test_missing_path_and_bad_depicts_are_usage_errors(run, photo):
    result = run("suggest", "nowhere.jpg", *TINY)
    assert result.exit_code == 2 and "no such image file: nowhere.jpg" in result.stderr
    result = run("suggest", str(photo), "--depicts", "cat", *TINY)
    assert result.exit_code == 2 and "--depicts 'cat' is not a QID" in result.stderr
    result = run("suggest", str(photo), "--tpo", "3", *TINY)
    assert result.exit_code == 2 and "no such option: --tpo" in result.stderr


def test_missing_weights_give_one_clear_line(run, photo, monkeypatch, labels_dir):
    # The default settings: ViT-B-32 with the laion2b tag, not downloaded on this machine.
    monkeypatch.setattr(weights_module, "cached_tag_file", lambda cfg: None)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = run("suggest", str(photo), "--linker", "zero-shot", "--labels", labels_dir)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert lines[0].startswith("error: the weights of ViT-B-32/laion2b_s34b_b79k are not in the local cache")
    assert "--weights PATH" in lines[0]


def test_linkers_lists_the_registry(run):
    result = run("linkers", "--json")
    assert result.exit_code == 0
    names = {entry["name"] for entry in json.loads(result.stdout)}
    assert names == {"zero-shot", "zero-shot-prompt", "naive-mlp", "naive-te", "fusion", "random-freq", "top-k",
                     "cascade"}
    table = run("linkers").stdout
    assert "naive-mlp" in table and "Naive CLIP (paper §4.1)" in table


def test_help_and_linkers_do_not_import_torch():
    code = (
        "import sys; from click.testing import CliRunner; from wikivel_bot.cli import main; "
        "r = CliRunner().invoke(main, ['linkers']); assert r.exit_code == 0, r.output; "
        "CliRunner().invoke(main, ['suggest', '--help']); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
