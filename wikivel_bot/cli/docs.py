"""Render the reference of every command as Markdown (``make docs`` writes docs/cli.md).

tests/test_docs.py fails when docs/cli.md differs from this rendering, so a command cannot be
added or changed without its documentation.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator, List

import click

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "cli.md"

HEADER = """# Command reference

Generated from the commands' own help by `make docs` (`python -m wikivel_bot.cli.docs
--write`); tests/test_docs.py checks it is current. Global options go before the command:
`wikivel-bot --db-url URL status`.
"""


def walk(command: click.Command, path: List[str]) -> Iterator[tuple]:
    yield path, command
    if isinstance(command, click.Group):
        for name in sorted(command.commands):
            yield from walk(command.commands[name], path + [name])


def render() -> str:
    from wikivel_bot.cli import main

    parts = [HEADER]
    for path, command in walk(main, ["wikivel-bot"]):
        title = " ".join(path)
        # The help option names come from the group's context settings, as they do when the
        # command really runs (click caches the option on first use, so they must match).
        ctx = click.Context(command, info_name=title, terminal_width=100, max_content_width=100,
                            help_option_names=main.context_settings["help_option_names"])
        level = "##" if len(path) <= 2 else "###"
        parts.append(f"{level} `{title}`\n\n```\n{command.get_help(ctx).rstrip()}\n```\n")
    return "\n".join(parts)


def main(argv: List[str]) -> int:
    text = render()
    if "--write" in argv:
        DOC_PATH.parent.mkdir(exist_ok=True)
        DOC_PATH.write_text(text, encoding="utf-8")
        print(f"wrote {DOC_PATH}")
        return 0
    current = DOC_PATH.read_text(encoding="utf-8") if DOC_PATH.is_file() else ""
    if current != text:
        print(f"{DOC_PATH} is out of date: run `make docs`")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
