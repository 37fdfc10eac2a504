"""`wikivel-bot suggest` with several inputs, run as a user runs it (a subprocess).

A bad input gets its own error line and the others are still linked; the exit code says
something failed; a title that never existed is "no such file", a deleted one "deleted";
M-ids work; and memory stays bounded however many large images are given (peak RSS of the
child process, measured by the kernel, with 1 image vs 8). Real parts throughout: the local
test wiki over HTTP, the tiny open_clip model with random weights, real PNG files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, List, Tuple

import pytest

pytest.importorskip("torch")
pytest.importorskip("pywikibot")

from tests.commons_support import CONTACT, wiki  # noqa: E402,F401
from tests.linker_support import tiny_model_file, write_animals_artifact  # noqa: E402
from wikivel_bot.linker.backbone.decode_budget import header_pixels, pixel_batches  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "testwiki" / "fixtures" / "files"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict:
    home = tmp_path_factory.mktemp("suggest")
    pwb = home / "pywikibot"
    pwb.mkdir()
    return {
        **os.environ, "PYTHONPATH": str(ROOT), "PYWIKIBOT_DIR": str(pwb), "PYWIKIBOT_NO_USER_CONFIG": "2",
        "WIKIVEL_LINKER_CACHE_DIR": str(home / "cache"), "WIKIVEL_SITE_OPERATOR_CONTACT": CONTACT,
        "HOME": str(home),
    }


@pytest.fixture(scope="module")
def tiny_args(tmp_path_factory: pytest.TempPathFactory) -> List[str]:
    labels = write_animals_artifact(tmp_path_factory.mktemp("labels") / "animals")
    return ["--model", str(tiny_model_file()), "--weights", "random", "--device", "cpu", "--labels", str(labels)]


def suggest(env: dict, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wikivel_bot", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_each_bad_input_gets_its_own_line_and_the_others_are_linked(wiki, env, tiny_args, tmp_path) -> None:  # noqa: F811
    long_title = "File:" + "A" * 300 + ".jpg"
    local = FIXTURES / "Red_apple.png"
    sources = [long_title, "File:Bad|title.jpg", "File:Noextension", "File:Never existed.jpg",
               "File:Deleted after upload.jpg", "M10005", "M99999999999999999999999", "File:Red apple.png",
               str(local), "nowhere.jpg"]
    result = suggest(env, tmp_path, "--api-url", wiki.api_url, "suggest", *sources, "--top", "2", "--json", *tiny_args)
    assert "Traceback" not in result.stderr
    assert result.returncode == 2, result.stderr  # malformed inputs among them
    errors = result.stderr.strip().splitlines()
    assert all(line.startswith("error: ") for line in errors), errors
    assert len(errors) == 7, errors
    by_input = dict(zip([long_title, "File:Bad|title.jpg", "File:Noextension", "File:Never existed.jpg",
                         "File:Deleted after upload.jpg", "M99999999999999999999999", "nowhere.jpg"],
                        errors))
    assert "255" in by_input[long_title] and "AAAA" in by_input[long_title]
    assert "'|'" in by_input["File:Bad|title.jpg"] and "Bad|title.jpg" in by_input["File:Bad|title.jpg"]
    assert "extension" in by_input["File:Noextension"] and "Noextension" in by_input["File:Noextension"]
    never = by_input["File:Never existed.jpg"]
    assert "no such file" in never and "Never existed.jpg" in never and "deleted" not in never
    assert "deleted" in by_input["File:Deleted after upload.jpg"]
    assert "too large" in by_input["M99999999999999999999999"]
    assert "no such image file: nowhere.jpg" in by_input["nowhere.jpg"]
    doc = json.loads(result.stdout)
    linked = [f for f in doc["files"] if f["ok"]]
    # M10005 is the mallard, named by its M-id; the Commons title and the local copy of the apple.
    assert [f["title"] for f in linked] == ["File:Mallard on pond.jpg", "File:Red apple.png", "Red_apple.png"]
    assert all(1 <= len(f["candidates"]) <= 2 for f in linked)
    assert len([f for f in doc["files"] if not f["ok"]]) == 7


def test_only_unusable_files_exit_1_and_good_ones_exit_0(wiki, env, tiny_args, tmp_path) -> None:  # noqa: F811
    failed = suggest(env, tmp_path, "--api-url", wiki.api_url, "suggest", "File:Never existed.jpg", "M10005", *tiny_args)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert failed.stderr.strip().splitlines() == [
        f"error: File:Never existed.jpg: no such file: File:Never existed.jpg does not exist on 127.0.0.1:{wiki.port}"]
    assert "File:Mallard on pond.jpg" in failed.stdout
    ok = suggest(env, tmp_path, "--api-url", wiki.api_url, "suggest", "M10005", "m10007", *tiny_args)
    assert ok.returncode == 0, ok.stderr
    assert "File:Mallard on pond.jpg" in ok.stdout and "File:Red apple.png" in ok.stdout


def test_pixel_batches_bound_the_pixels_of_each_group() -> None:
    sizes = [10, 30, 5, 50, 1, 1, 1, 45]
    groups = list(pixel_batches(sizes, lambda n: n, max_pixels=40, max_count=3))
    assert groups == [[10, 30], [5], [50], [1, 1, 1], [45]]
    for group in groups:
        assert len(group) == 1 or sum(group) <= 40
    assert [x for g in groups for x in g] == sizes


def test_pixel_batches_consume_their_input_lazily() -> None:
    taken: List[int] = []

    def source() -> Any:
        for n in range(100):
            taken.append(n)
            yield 20

    first = next(pixel_batches(source(), lambda n: n, max_pixels=40, max_count=32))
    assert first == [20, 20] and len(taken) == 3  # one item of look-ahead, not the whole list


def _peak_rss_mb(cmd: List[str], env: dict, cwd: Path) -> Tuple[int, str]:
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, stderr
    return usage.ru_maxrss // 1024, stderr  # Linux: kilobytes


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in kB is Linux's")
def test_memory_stays_bounded_with_many_large_images(env, tiny_args, tmp_path) -> None:
    """8 PNGs of 24 megapixels (72 MB each decoded): decoded all at once they add ~500 MB
    to the peak; in pixel-bounded groups the peak grows by about one image at most."""
    from PIL import Image

    paths = []
    for i in range(8):
        path = tmp_path / f"big{i}.png"
        Image.new("RGB", (6000, 4000), (i * 30 % 255, 90, 40)).save(path, compress_level=1)
        paths.append(str(path))
    assert header_pixels(Path(paths[0])) == 24_000_000
    base = [sys.executable, "-m", "wikivel_bot", "suggest", *tiny_args]
    one, _ = _peak_rss_mb(base + paths[:1], env, tmp_path)
    eight, _ = _peak_rss_mb(base + paths, env, tmp_path)
    per_image = 6000 * 4000 * 3 // 2**20
    assert eight - one < 2 * per_image, f"peak RSS {one} MB with 1 image, {eight} MB with 8"
