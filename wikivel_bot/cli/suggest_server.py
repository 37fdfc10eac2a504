"""``suggest --server URL``: ask a running tool's resident linker (``GET /api/suggest``) instead
of building the linker in this process, so a suggestion from the terminal costs a fraction of a
second rather than torch's import and the model's load.

Used only when every source is a Commons file (``File:`` title, M-id, Commons URL) and no
linker option was given (the service answers with its own linker, not with those). When the
service cannot be reached or refuses (busy, suggestions off), one line says so and ``suggest``
builds the linker itself, as without ``--server``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

import click
import requests

from wikivel_bot.core.titles import FILE_PREFIXES
from wikivel_bot.types import is_mid

TIMEOUT_S = 60.0


def usable(sources: Sequence[str]) -> bool:
    """Whether the service can answer every source (Commons files, no local paths or generators)."""
    return bool(sources) and all(
        s.strip().lower().startswith(FILE_PREFIXES + ("http://", "https://")) or is_mid(s.strip(), any_case=True)
        for s in sources)


def ask_server(server: str, sources: Sequence[str], as_json: bool, user_agent: str) -> Optional[int]:
    """Print the service's answers as ``suggest`` prints its own; the exit code, or None when
    the service did not answer (the caller then links here)."""
    base = server.rstrip("/")
    entries: List[Dict[str, Any]] = []
    head: Optional[Dict[str, Any]] = None
    failed = False
    with requests.Session() as http:
        http.headers["User-Agent"] = user_agent
        for source in sources:
            try:
                answer = http.get(base + "/api/suggest", params={"file": source}, timeout=TIMEOUT_S)
                body = answer.json()
            except (requests.RequestException, ValueError) as exc:
                _fallback(base, type(exc).__name__)
                return None
            if answer.status_code in (400, 404, 502):
                failed = True
                reason = " ".join(str(body.get("error", "")).split())
                click.echo(f"error: {reason}", err=True)
                entries.append({"source": source, "title": source, "ok": False, "reason": reason})
                continue
            if answer.status_code != 200:
                _fallback(base, f"HTTP {answer.status_code}: {body.get('error', '')}")
                return None
            if body.get("source") == "queue":
                entries.append(_queued_entry(body))
                continue
            head = head or body
            entries.extend(body.get("files") or [])
    if as_json:
        doc = {k: v for k, v in (head or {}).items() if k not in ("source", "mid", "cached", "items", "files")}
        doc["files"] = entries
        doc["server"] = base
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        version = ((head or {}).get("linker") or {}).get("version", "")
        click.echo(f"linker: {version} (the resident service at {base})" if version else f"service: {base}")
        for entry in entries:
            _print_entry(entry)
    return 1 if failed else 0


def _fallback(base: str, why: str) -> None:
    click.echo(f"suggest: the service at {base} did not answer ({' '.join(why.split())}); linking here instead",
               err=True)
    return None


def _queued_entry(body: Dict[str, Any]) -> Dict[str, Any]:
    """A file the running linker queued, as the queue shows it (with each pair's review state)."""
    view = body.get("file") or {}
    return {"title": view.get("title", ""), "ok": True, "queued": True, "candidates": [
        {"rank": c.get("rank"), "qid": c.get("item"), "label": c.get("label", ""),
         "description": c.get("description", ""), "score": c.get("score"), "why": c.get("why", ""),
         "state": c.get("state")} for c in view.get("candidates") or ()]}


def _print_entry(entry: Dict[str, Any]) -> None:
    click.echo("")
    click.echo(str(entry.get("title", "")) + ("  (queued: review states shown)" if entry.get("queued") else ""))
    if not entry.get("ok"):
        click.echo(f"  not linked: {entry.get('reason', '')}")
        return
    if not entry.get("candidates"):
        click.echo("  (no suggestions left after the ranking rules)")
    for c in entry.get("candidates") or ():
        score = c.get("score")
        shown = f"{score:7.4f}" if isinstance(score, (int, float)) else "      -"
        state = f"  [{c['state']}]" if c.get("state") else ""
        click.echo(f"  {c.get('rank', ''):>4}  {c.get('qid', ''):<11} {str(c.get('label', ''))[:24]:<24} "
                   f"{str(c.get('description', ''))[:32]:<32} {shown}  {c.get('why', '')}{state}".rstrip())
    withheld = entry.get("withheld") or {}
    if withheld:
        click.echo("  withheld by the safety rules: " + ", ".join(f"{n} ({rule})" for rule, n in withheld.items()))
