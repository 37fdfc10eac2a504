"""Docs that must match the code: the command reference and the README's two commands."""

from __future__ import annotations

from pathlib import Path

from wikivel_bot.cli import docs, main

ROOT = Path(__file__).resolve().parents[1]


def test_cli_reference_is_current() -> None:
    current = docs.DOC_PATH.read_text(encoding="utf-8")
    assert current == docs.render(), "docs/cli.md is out of date: run `make docs`"


def test_every_command_is_documented() -> None:
    text = docs.DOC_PATH.read_text(encoding="utf-8")
    for path, command in docs.walk(main, ["wikivel-bot"]):
        assert f"`{' '.join(path)}`" in text
        assert command.help, f"{' '.join(path)} has no help text"


def test_readme_shows_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make run" in readme and "make test" in readme
