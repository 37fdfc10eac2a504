"""The ``wikivel-bot`` command: a click group with thin commands.

Each command parses options, builds objects through :class:`CliContext`, calls one library
function and prints. Library errors (``WikivelError``) become one line on stderr and an exit
code here, never a traceback. Heavy imports (torch, pywikibot) happen inside commands so
``status``, ``review`` and ``--help`` start fast.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, List, Optional

import click

from wikivel_bot import __version__
from wikivel_bot.cli.context import CliContext
from wikivel_bot.core.secrets import redact_secrets
from wikivel_bot.errors import WikivelError


class WikivelGroup(click.Group):
    """A click group that turns WikivelError into one clear line and its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except WikivelError as exc:
            # One line, even when a driver's message spans several; never a password.
            click.echo("error: " + redact_secrets(" ".join(str(exc).split())), err=True)
            ctx.exit(exc.exit_code)
        except click.BadParameter as exc:
            # A value out of its range or of the wrong kind: one line naming the option, the
            # value and what is accepted (click's own display spans four lines).
            click.echo("error: " + redact_secrets(" ".join(exc.format_message().split())), err=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.ClickException, click.exceptions.Abort):
            raise
        except Exception as exc:
            from wikivel_bot.cli.errors import translate

            translated = translate(exc, ctx.obj)
            if translated is None:
                raise
            click.echo("error: " + " ".join(str(translated).split()), err=True)
            ctx.exit(translated.exit_code)


@click.group(cls=WikivelGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="wikivel-bot")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Settings file (TOML). Default: $WIKIVEL_CONFIG, else ./wikivel.toml if present.",
)
@click.option("--db-url", help="Queue database URL (overrides db.url / WIKIVEL_DB_URL).")
@click.option(
    "--site",
    help="Wiki to work on: commons (default), commons:test or commons:beta.",
)
@click.option("--api-url", help="API URL of any MediaWiki with WikibaseMediaInfo (overrides --site).")
@click.option("--wikidata-api-url", help="API URL of the Wikibase repo for items.")
@click.option("-v", "--verbose", count=True, help="More log output (repeat for debug).")
@click.pass_context
def main(
    ctx: click.Context,
    config_path: Optional[Path],
    db_url: Optional[str],
    site: Optional[str],
    api_url: Optional[str],
    wikidata_api_url: Optional[str],
    verbose: int,
) -> None:
    """wikivel-bot proposes the Wikidata items a Commons file depicts (P180), keeps the
    proposals in a review queue, and writes only statements a human approved.

    Settings come from a TOML file and WIKIVEL_<SECTION>_<KEY> variables; see
    wikivel.example.toml. pywikibot's account settings stay in its user-config.py.
    """
    overrides = {}
    for (section, key), value in {
        ("db", "url"): db_url,
        ("site", "name"): site,
        ("site", "api_url"): api_url,
        ("site", "wikidata_api_url"): wikidata_api_url,
    }.items():
        if value is not None:
            overrides[(section, key)] = value
    cli_context = CliContext(config_path=config_path, overrides=overrides, verbose=verbose)
    ctx.obj = cli_context
    ctx.call_on_close(cli_context.close)


def _register() -> None:
    # Each module holds one command or command group; registering here keeps the list of
    # verbs in one place (docs/cli.md is checked against it by tests/test_docs.py).
    from wikivel_bot.cli import db as db_commands
    from wikivel_bot.cli import link as link_commands
    from wikivel_bot.cli import run as run_commands
    from wikivel_bot.cli import status as status_commands
    from wikivel_bot.cli import suggest as suggest_commands
    from wikivel_bot.cli import linkers as linkers_commands
    from wikivel_bot.cli import poll as poll_commands
    from wikivel_bot.cli import labels as labels_commands
    from wikivel_bot.cli import review as review_commands
    from wikivel_bot.cli import export as export_commands
    from wikivel_bot.cli import audit as audit_commands
    from wikivel_bot.cli import write as write_commands
    from wikivel_bot.cli import evaluate as evaluate_commands
    from wikivel_bot.cli import train as train_commands
    from wikivel_bot.cli import train_evidence as train_evidence_commands
    from wikivel_bot.cli import liveeval as liveeval_commands
    from wikivel_bot.cli import web as web_commands
    from wikivel_bot.cli import backfill as backfill_commands
    from wikivel_bot.cli import learning as learning_commands
    from wikivel_bot.cli import bot_request as bot_request_commands
    from wikivel_bot.cli import extras

    main.add_command(labels_commands.labels)
    main.add_command(db_commands.db)
    main.add_command(link_commands.link)
    main.add_command(run_commands.run)
    main.add_command(status_commands.status)
    main.add_command(status_commands.config_command)
    status_commands.config_command.add_command(bot_request_commands.bot_request)
    main.add_command(suggest_commands.suggest)
    main.add_command(linkers_commands.linkers)
    main.add_command(poll_commands.poll)
    main.add_command(poll_commands.fetch)
    main.add_command(review_commands.review)
    main.add_command(export_commands.export)
    main.add_command(export_commands.import_decisions)
    main.add_command(audit_commands.audit)
    main.add_command(write_commands.write)
    main.add_command(write_commands.revert)
    main.add_command(evaluate_commands.evaluate)
    main.add_command(evaluate_commands.human_eval)
    train_commands.dataset.add_command(train_evidence_commands.synthetic_evidence)
    train_commands.train.add_command(train_evidence_commands.train_evidence)
    main.add_command(train_commands.dataset)
    train_commands.dataset.add_command(learning_commands.dataset_from_decisions)
    main.add_command(train_commands.train)
    main.add_command(learning_commands.models)
    main.add_command(liveeval_commands.evaluate_live)
    main.add_command(liveeval_commands.calibrate)
    main.add_command(liveeval_commands.report)
    main.add_command(web_commands.web)
    main.add_command(backfill_commands.backfill)
    extras.document(main)


_register()


def run(argv: Optional[List[str]] = None) -> None:
    """Console-script entry point."""
    main.main(args=argv if argv is not None else sys.argv[1:], prog_name="wikivel-bot")
