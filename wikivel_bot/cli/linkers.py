"""``wikivel-bot linkers``: the registry of linker variants (no torch needed)."""

from __future__ import annotations

import json

import click


@click.command("linkers")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def linkers(as_json: bool) -> None:
    """List the linker variants (--linker NAME, setting linker.name) and what they need."""
    from wikivel_bot.linker.registry import list_linkers

    specs = list_linkers()
    if as_json:
        click.echo(json.dumps([{**s.as_dict(), "kind": s.kind, "source": s.source} for s in specs], indent=2))
        return
    for spec in specs:
        needs = "torch + CLIP weights" if spec.kind == "clip" else "label set only"
        if spec.has_head:
            needs += "; a trained --checkpoint (without one: untrained head)"
        click.echo(f"{spec.name:<12} {spec.architecture:<17} v{spec.version}  needs {needs}")
        click.echo(f"{'':<12} {spec.description}")
