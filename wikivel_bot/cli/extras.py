"""Which extra of setup.cfg a command needs beyond the base install, said in its ``--help``.

The base install (``install_requires``) runs the queue, review, export, poll, fetch, write
and scoring commands. The commands below need more; each gets one closing line in its help
(and so in docs/cli.md) naming what to install and why. tests/test_declared_dependencies.py
reads those lines back and checks every import a command reaches against them.
"""

from __future__ import annotations

import inspect
from typing import Dict, Tuple

import click

_LINKER = "the linker runs on torch and open_clip"

# Command path (as typed after ``wikivel-bot``) -> (extras, why).
COMMAND_EXTRAS: Dict[str, Tuple[Tuple[str, ...], str]] = {
    "run": (("ml",), _LINKER),
    "link": (("ml",), _LINKER),
    "suggest": (("ml",), _LINKER),
    "evaluate-live": (("ml",), _LINKER),
    "evaluate": (("ml",), "--checkpoint runs the trained linker"),
    "linkers": (("ml",), "--check-precision runs the encoders"),
    "train": (("train",), "torch, and matplotlib for the report's figures"),
    "dataset reproduce-synthetic": (("train",), "it trains, and draws figures with matplotlib"),
    "report": (("report",), "matplotlib draws the figures; without it the report has none"),
    "web": (("web",), "Flask, Authlib and waitress"),
    "backfill": (("backfill",), "Ray Data and the linker"),
    "labels build": (("dumps",), "optional: faster dump reading, with a fallback without it"),
    "dataset build": (("dumps",), "optional: faster dump reading, with a fallback without it"),
}


def help_line(extras: Tuple[str, ...], why: str) -> str:
    """``Needs: pip install 'wikivel-bot[ml]' (why).``"""
    return f"Needs: pip install 'wikivel-bot[{','.join(extras)}]' ({why})."


def document(group: click.Group) -> None:
    """Close the help of each command of :data:`COMMAND_EXTRAS` with its :func:`help_line`.

    :param group: the ``wikivel-bot`` group, with every command registered.
    :raises KeyError: a listed command does not exist (the list went stale).
    """
    for path, (extras, why) in COMMAND_EXTRAS.items():
        command: click.Command = group
        for name in path.split():
            command = group_commands(command)[name]
        line = help_line(extras, why)
        if line not in (command.help or ""):
            # Dedented first: click dedents a raw docstring by its common indentation, which
            # the appended, unindented line would otherwise reduce to none.
            command.help = f"{inspect.cleandoc(command.help or '')}\n\n{line}"


def group_commands(command: click.Command) -> Dict[str, click.Command]:
    """The subcommands of a group (none for a plain command)."""
    return dict(command.commands) if isinstance(command, click.Group) else {}
