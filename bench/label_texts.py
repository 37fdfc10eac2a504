"""What keeping display languages (``labels.languages``) costs the Wikidata block parser.

    .venv/bin/python bench/label_texts.py [--items 2000] [--repeat 9]

Synthetic item lines (one P31 claim; labels in 13 or 300 languages, descriptions in half of
them) parsed by ``parse_wikidata_block`` as a worker would, one core, without display
languages and with the 13 default ones, alternating runs; medians. The build reads display
texts only for depicted (or listed) items, known before the Wikidata dump is read
(``display_for``), so the share of depicted items in a block is a parameter: about 2% of
Wikidata's items are depicted on Commons (a few million of ~110 million, *estimate*).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ holds queue.py, which would shadow the standard library's queue module (used by
# pyarrow): put the repository root first instead of this folder.
sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from wikivel_bot.config import LabelsSettings  # noqa: E402
from wikivel_bot.labels.blocks import WikidataOptions, parse_wikidata_block  # noqa: E402

DISPLAY = LabelsSettings().languages


def item_line(qid: int, languages: list) -> str:
    claim = {"mainsnak": {"snaktype": "value", "property": "P31", "datavalue": {
        "value": {"entity-type": "item", "numeric-id": 5, "id": "Q5"}, "type": "wikibase-entityid"}},
        "type": "statement", "rank": "normal"}
    entity = {"type": "item", "id": f"Q{qid}",
              "labels": {lang: {"language": lang, "value": f"label {lang} {qid}"} for lang in languages},
              "descriptions": {lang: {"language": lang, "value": f"description {lang} {qid}"} for lang in languages[::2]},
              "aliases": {}, "claims": {"P31": [claim]}, "sitelinks": {}}
    return json.dumps(entity, separators=(",", ":")) + ","


def measure(n_items: int, n_languages: int, share: float, repeat: int, directory: Path) -> str:
    languages = [f"x{i}" for i in range(max(0, n_languages - len(DISPLAY)))] + list(DISPLAY)
    data = ("\n".join(item_line(q, languages) for q in range(1, n_items + 1)) + "\n").encode()
    rng = np.random.default_rng(0)
    depicted = np.arange(1, n_items + 1)[rng.random(n_items) < share]
    # Plus 3 million depicted items elsewhere in the dump: the look-up searches all of them.
    wanted = np.unique(np.concatenate([depicted, rng.integers(10**7, 10**8, 3_000_000)]))
    path = directory / f"display_for-{share}.npy"
    np.save(path, wanted)
    runs: dict = {"none": [], "display": []}
    for _ in range(repeat):
        for name, display in (("none", ()), ("display", DISPLAY)):
            options = WikidataOptions(languages=("en",), display_languages=display, display_for=str(path))
            started = time.perf_counter()
            parse_wikidata_block(1, data, options)
            runs[name].append(time.perf_counter() - started)
    none, display = (statistics.median(runs[k]) / n_items * 1e6 for k in ("none", "display"))
    return (f"| {n_languages} | {share:.0%} | {none:.1f} | {display:.1f} | {display / none:.2f} | "
            f"{os.getloadavg()[0]:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    print("| label languages per item | items depicted | µs/item without | µs/item with 13 | ratio | load |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for n_languages, share in ((13, 0.02), (300, 0.02), (300, 1.0)):
            print(measure(args.items, n_languages, share, args.repeat, Path(tmp)), flush=True)


if __name__ == "__main__":
    main()
