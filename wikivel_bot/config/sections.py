"""The settings' sections and their defaults: one commented block per section.

Every key a user can set is a field here, with its type and default; ``loading.py`` reads the
TOML file and the ``WIKIVEL_*`` variables into these classes and checks their values.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Tuple

from wikivel_bot.config.paths import default_cache_dir
from wikivel_bot.core.evidence import IdentifierRule, merged_rules, rules_from_table
from wikivel_bot.errors import ConfigError
from wikivel_bot.types import is_qid

@dataclass(frozen=True)
class DbSettings:
    # SQLAlchemy URL of the queue. The embedded default needs no server; use
    # postgresql+psycopg://... or mysql+pymysql://... (Toolforge ToolsDB) for several workers.
    url: str = "sqlite:///db/wikivel.sqlite"
    # Log every SQL statement (debugging only).
    echo: bool = False
    # Seconds a claimed row stays reserved for a worker (10 to 604800). Writers and the daemon
    # renew their leases while they work, so this is how long a crashed worker on another
    # host holds its rows; a dead process on the same host is detected and freed at once.
    claim_lease_s: int = 900


@dataclass(frozen=True)
class SiteSettings:
    # commons | commons:test | commons:beta, ignored when api_url is set.
    name: str = "commons"
    # Any MediaWiki with WikibaseMediaInfo, e.g. http://127.0.0.1:8765/w/api.php.
    api_url: str = ""
    # The Wikibase repo for items; empty = the one the site names.
    wikidata_api_url: str = ""
    # Put in the User-Agent of every request (Wikimedia policy): a user page or e-mail.
    operator_contact: str = ""
    # Language fallback for descriptions and labels, first wins.
    languages: Tuple[str, ...] = ("en",)


# A BCP 47-like language code as Wikidata uses them: "en", "de", "zh-hans", "be-tarask".
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(-[a-z0-9]{1,8})*")


@dataclass(frozen=True)
class LabelsSettings:
    # Languages whose item labels and descriptions a label set keeps, for the review page
    # (`uselang`, falling back to English). Read by `labels build`; the linker's text keeps
    # using site.languages, so changing this list rebuilds no label index.
    languages: Tuple[str, ...] = ("en", "de", "fr", "es", "it", "nl", "pt", "pl", "ru", "uk", "sv", "ja", "zh")

    def __post_init__(self) -> None:
        for value in self.languages:
            if not isinstance(value, str) or not _LANGUAGE_CODE.fullmatch(value):
                raise ConfigError(f"labels.languages: {value!r} is not a language code (like en, de, zh-hans)")


@dataclass(frozen=True)
class PollSettings:
    # Seconds between polls of the upload log in the daemon.
    interval_s: int = 60
    # Also enqueue new versions of existing files (upload/overwrite).
    include_overwrites: bool = False
    # Bitmaps by default; SVG is linked through its rendered PNG thumbnail.
    mime_types: Tuple[str, ...] = (
        "image/jpeg",
        "image/png",
        "image/gif",
        "image/webp",
        "image/tiff",
        "image/svg+xml",
    )
    # Smaller images carry too little to link; both sides must reach these.
    min_width: int = 200
    min_height: int = 200
    # Skip files that already carry at least this many depicts statements.
    max_existing_depicts: int = 3
    # Opt-out lists (user names without "User:", category names without "Category:").
    skip_uploaders: Tuple[str, ...] = ()
    skip_categories: Tuple[str, ...] = ()
    # Log entries asked for per API request.
    batch_size: int = 500


@dataclass(frozen=True)
class FetchSettings:
    # A standard thumbnail step (20, 40, 60, 120, 250, 330, 500, 960, 1280, 1920, 3840).
    thumb_width: int = 330
    timeout_s: float = 30.0
    retries: int = 3
    # upload.wikimedia.org asks unidentified clients for at most 2 connections.
    max_connections: int = 2
    max_bytes: int = 20_000_000
    # Titles per API request (the API allows 50 for bots and users alike here).
    batch_size: int = 50


@dataclass(frozen=True)
class LinkerSettings:
    # A name from `wikivel-bot linkers`: zero-shot, naive-mlp, naive-te, fusion, top-k, ...
    name: str = "zero-shot"
    # open_clip architecture and pretrained tag.
    model: str = "ViT-B-32"
    pretrained: str = "laion2b_s34b_b79k"
    # A local weights file for offline machines, or "random" for smoke runs (outputs say so).
    weights: str = ""
    # A trained head checkpoint for naive-mlp / naive-te / fusion.
    checkpoint: str = ""
    # auto = CUDA when present, else CPU.
    device: str = "auto"
    # CPU threads for torch; 0 = torch's default.
    threads: int = 0
    # Directory of a label set; empty = the starter set shipped with the package.
    labels_dir: str = ""
    # Where label indexes, item images and other caches live: by default the user's cache
    # directory ($XDG_CACHE_HOME/wikivel-bot, else ~/.cache/wikivel-bot), never the checkout.
    cache_dir: str = field(default_factory=default_cache_dir)
    # Candidates kept per file.
    top_k: int = 10
    # Candidates below this score are not proposed. A checkpoint learned from decisions
    # (learning.models_dir) runs at its own operating threshold instead (docs/learning.md).
    min_score: float = 0.0
    # Keep an ancestor over a more specific item only when it scores this much higher.
    ancestor_margin: float = 0.05
    # Items never proposed.
    blocklist: Tuple[str, ...] = ()
    batch_size: int = 32
    # Thresholds from `wikivel-bot calibrate`: suggest, export and review keep only
    # suggestions that reach their linker's (or super-category's) threshold. Empty = off.
    calibrated: str = ""
    # -- CPU fast path --
    # Encoder precision: auto | fp32 | bf16 | int8. auto = bf16 where the CPU has AMX or
    # AVX512-BF16 (and on CUDA), int8 where it has VNNI, else fp32; once `wikivel-bot linkers
    # --check-precision` has run on this machine, the fastest precision that passed it.
    precision: str = "auto"
    # A verifier beside any linker: a cascade checkpoint with a calibration (the
    # best.pt of `train --variant cascade`). Every suggestion then carries its calibrated
    # match probability, which `calibrate --on probability` thresholds. Empty = none.
    verifier: str = ""
    # The evidence model (`wikivel-bot train evidence`, a JSON checkpoint): each suggestion's
    # probability combines its image score with the file's own evidence (docs/evidence.md),
    # and the suggestions are ranked by it. Empty = none: probabilities as the linker gives them.
    evidence_model: str = ""


@dataclass(frozen=True)
class CascadeSettings:
    # The cascade linker (linker.name = "cascade", linker.checkpoint = a cascade checkpoint).
    # First-stage candidates the pair model re-ranks per file (seed 004 re-ranks a top slice).
    candidates: int = 50
    # File-text tokens the pair model reads when it is trained (a trained checkpoint keeps its
    # own). 24 holds a real-looking file's name and two categories (they come before the
    # description); on synthetic data no longer cut ranked better beyond the seeds' noise
    # (bench/cascade_text.py), and the text tower's cost grows with the length: at 32 a file's
    # text costs about 28 % of ViT-B-32's image tower, at 24 about 21 % (docs/cascade.md,
    # "File text: order and budget").
    text_tokens: int = 24
    # First stage when no cascade checkpoint names one (an untrained cascade ranks like it).
    first_stage: str = "naive-mlp"
    # Attach the verifier's calibrated match probability to suggestions (when the checkpoint has one).
    verifier: bool = True


@dataclass(frozen=True)
class ReviewSettings:
    # Recorded with every decision; --reviewer overrides.
    reviewer: str = ""
    # Which waiting file comes next: "queue" (oldest first) or "uncertainty" (the file whose
    # suggestion is nearest the decision boundary, learning.threshold, first: what the model
    # learns most from; docs/learning.md). `status` and the review pages name it.
    order: str = "queue"

    def __post_init__(self) -> None:
        if self.order not in ("queue", "uncertainty"):
            raise ConfigError(f"review.order: {self.order!r} is not an order (queue or uncertainty)")


@dataclass(frozen=True)
class WriteSettings:
    # The daemon writes approved statements only when this is true.
    enabled: bool = False
    # Simulate every write (pywikibot `simulate`); nothing leaves the machine. Sticky: if
    # the file, WIKIVEL_WRITE_DRY_RUN or --dry-run asks for it, it is a dry run.
    dry_run: bool = False
    batch_size: int = 10
    # Change tags added to every edit (must exist and be active on the wiki).
    tags: Tuple[str, ...] = ()
    # Attempts before a transient failure is left for a human.
    max_attempts: int = 5


@dataclass(frozen=True)
class DaemonSettings:
    # A wiki page whose content must equal stop_run_text for writing to go on.
    stop_page: str = ""
    stop_run_text: str = "run"
    # Seconds between fetch+link rounds.
    link_interval_s: int = 30
    # Seconds between maintenance rounds.
    maintenance_interval_s: int = 3600
    # Port of a Prometheus metrics endpoint; 0 = off.
    metrics_port: int = 0


@dataclass(frozen=True)
class SafetySettings:
    # Never suggest a named person (an instance of human, Q5, or of person_classes, or an
    # item without P31 that has P21/P569/P570/P106) from the image alone; only when the
    # file's own evidence ties it to that item (a linked category, a description link, an
    # identifier: docs/evidence.md), never for a word of its name in the text. false only
    # with the community's consent: suggest and status say so while it is off.
    withhold_people: bool = True
    # Instances of these classes are people too (e.g. Q15632617 fictional human).
    person_classes: Tuple[str, ...] = ("Q5",)
    # Items under these classes (anywhere in the P31/P279 closure, no hop ceiling) are
    # withheld unless the file's evidence ties it to them; [] switches the rule off. Default: ethnic group,
    # religion, religious denomination, sexual orientation, gender identity, disease,
    # mental disorder, disability, political ideology, political party, trade union
    # (docs/operator.md).
    sensitive_classes: Tuple[str, ...] = (
        "Q41710", "Q9174", "Q13414953", "Q17888", "Q48264", "Q12136", "Q12135", "Q12131", "Q12909644",
        "Q7278", "Q178790",
    )
    # These classes and everything under them are never suggested, named or not.
    blocked_classes: Tuple[str, ...] = ()
    # Files using one of these templates are not linked (opt-outs on the description page).
    skip_templates: Tuple[str, ...] = ("Personality rights",)

    def __post_init__(self) -> None:
        # A misspelt class would silently withhold nothing: fail at load with the key's name.
        for key in ("person_classes", "sensitive_classes", "blocked_classes"):
            for value in getattr(self, key):
                if not is_qid(value):
                    raise ConfigError(f"safety.{key}: {value!r} is not a Wikidata item id (like Q5)")


@dataclass(frozen=True)
class EvidenceSettings:
    """Commons' own evidence (docs/evidence.md): categories, description links and identifier
    templates that name items, resolved through Commons and Wikidata."""

    # Read and resolve the evidence; false = suggestions from the image alone.
    enabled: bool = True
    # Identifier templates added to the shipped table (Rijksmonument → P359, Mérimée → P380,
    # ...); a row for a template already there replaces it. Rows are tables:
    # {template = "Rijksmonument", parameter = "1", property = "P359"} (parameter "1" = the
    # first unnamed one). As a variable: "Template|parameter|Pnnn,Template2|1|Pmmm".
    identifier_templates: Tuple[IdentifierRule, ...] = ()
    # Days a resolved category, link or identifier (or "no item") is kept in the queue
    # database before it is asked again.
    cache_days: int = 30
    # An unlinked category named exactly like one item's label or alias counts as (weaker)
    # evidence for it.
    category_label_match: bool = True

    def __post_init__(self) -> None:
        # Rows built in code are checked like rows read from a file.
        rules_from_table(self.identifier_templates, "evidence.identifier_templates")

    @property
    def identifier_rules(self) -> Tuple[IdentifierRule, ...]:
        """The shipped table with :attr:`identifier_templates` added."""
        return merged_rules(self.identifier_templates)


@dataclass(frozen=True)
class WebSettings:
    """The patrollers' review page (``wikivel-bot web``)."""

    # Where `wikivel-bot web` listens (--host/--port override).
    host: str = "127.0.0.1"
    port: int = 8080
    # The address reviewers use (e.g. https://wikivel.toolforge.org): the OAuth callback is
    # built from it, and session cookies are Secure when it is https. Empty = the request's.
    public_url: str = ""
    # OAuth 2.0 endpoints' base (…/w/rest.php); empty = the configured site's.
    oauth_url: str = ""
    # The OAuth 2.0 consumer's client id (Special:OAuthConsumerRegistration).
    oauth_client_id: str = ""
    # A TOML file with oauth_client_secret and session_secret (kept out of this file, so
    # `config show` never prints them); chmod 600.
    secrets_file: str = ""
    # Who may decide: members of any of these groups, or these users. Blocked users never.
    allowed_groups: Tuple[str, ...] = ("autoconfirmed",)
    allowed_users: Tuple[str, ...] = ()
    # Users who may also revert a write batch and override another reviewer's decision.
    operators: Tuple[str, ...] = ()
    # Members of these wiki groups are operators too (e.g. "sysop").
    operator_groups: Tuple[str, ...] = ()
    # Decisions one reviewer may post per minute (per web process).
    decisions_per_minute: int = 120
    # Files per page of /api/queue and the grid.
    page_size: int = 24
    # Worker threads of the WSGI server; the web's database pool keeps as many connections.
    threads: int = 8
    # A login ends this many hours after it began, however active (logout ends it sooner).
    session_hours: float = 12.0
    # The reviewer's wiki account (blocked, groups) is re-read at most this often, and
    # before any decision once this long has passed (0 = on every request).
    profile_check_minutes: float = 5.0
    # The resident suggestion service (GET /api/suggest, the user script /gadget.js): the web
    # process keeps the ready linker in memory (needs the ML extras and ~1 GiB more memory).
    suggest: bool = False
    # Pages allowed to call the API from a browser (CORS); empty = the wiki the bot edits
    # (https://commons.wikimedia.org and https://commons.m.wikimedia.org for Commons).
    suggest_origins: Tuple[str, ...] = ()
    # Suggestions one client (a login, else an IP address) may ask for per minute.
    suggest_per_minute: int = 60
    # Requests that may wait for the linker; one more is answered 503 with Retry-After.
    suggest_queue: int = 64
    # How long a request waits for others to join its linker batch.
    suggest_window_ms: float = 20.0
    # Files linked in one model call at most (0 = linker.batch_size); 1 turns batching off
    # (docs/benchmarks.md: on a loaded 2-core CPU one file a call was faster per file).
    suggest_batch: int = 0
    # Answers kept in memory, per (file revision, linker version).
    suggest_cache_files: int = 2048
    # How long browsers and proxies may keep a fresh suggestion (Cache-Control max-age).
    suggest_max_age_s: int = 300
    # `wikivel-bot suggest` asks this running tool first (its resident linker), e.g.
    # https://wikivel.toolforge.org; empty = link in the command's own process.
    suggest_server: str = ""

    def __post_init__(self) -> None:
        # Numbers are checked with the rest in NUMERIC_RULES (naming where they came from).
        for origin in self.suggest_origins:
            if not origin.startswith(("https://", "http://")) or origin.rstrip("/").count("/") != 2:
                raise ConfigError(f"web.suggest_origins entries must be origins like https://commons.wikimedia.org, "
                                  f"not {origin!r}")
        for key in ("public_url", "oauth_url", "suggest_server"):
            value = getattr(self, key)
            if value and not value.startswith(("https://", "http://")):
                raise ConfigError(f"web.{key} must start with https:// or http://, not {value!r}")


@dataclass(frozen=True)
class BackfillSettings:
    # Running on Toolforge (Wikimedia Cloud): the media servers' robot-policy limits below
    # are not enforced there, so toolforge_connections applies and no bandwidth cap.
    toolforge: bool = False
    # Robot policy for upload.wikimedia.org: at most 2 concurrent downloads in total and
    # 25 Mbit/s averaged over 10 s, across every node of a Ray cluster.
    max_connections: int = 2
    max_mbps: float = 25.0
    # Concurrent downloads in total on Toolforge.
    toolforge_connections: int = 8
    # Files per API request and per Ray batch of the read/filter stage (at most 50).
    batch_size: int = 50
    # Linker actors; 0 = one per GPU, else one per two CPUs of the cluster (at least one).
    actors: int = 0
    # Claims carry "backfill:<run_name>"; a run restarted under the same name takes back
    # what its killed predecessor held.
    run_name: str = "default"
    # Also write the candidates as Parquet shards here ("" = off).
    parquet_dir: str = ""


@dataclass(frozen=True)
class LearningSettings:
    # Learning from reviewers (docs/learning.md). Checkpoints trained from decisions live
    # here, each with its report, and registry.json names the one that runs: when it names
    # one, it replaces linker.checkpoint everywhere (daemon, suggest, link). "" = off.
    models_dir: str = ""
    # Hours between the daemon's learning rounds (decisions -> challenger -> judged ->
    # promoted only if it wins); 0 = off.
    schedule_hours: float = 0.0
    # The operating threshold on the calibrated match probability the judge compares at.
    threshold: float = 0.5
    # Decisions kept per reviewer (the newest), so one prolific reviewer cannot define the
    # model; 0 = no cap.
    reviewer_cap: int = 0
    # Reviewers whose decisions never become training data.
    exclude_reviewers: Tuple[str, ...] = ()
    # Bootstrap resamples (over evaluation files) of the judge's confidence interval, and its seed.
    bootstrap: int = 1000
    seed: int = 0
    # Fine-tuning: passes over the training decisions and the heads' learning rate.
    epochs: int = 30
    lr: float = 0.001


@dataclass(frozen=True)
class Settings:
    """Everything wikivel-bot can be configured with. Build with :func:`load_settings`."""

    db: DbSettings = field(default_factory=DbSettings)
    site: SiteSettings = field(default_factory=SiteSettings)
    labels: LabelsSettings = field(default_factory=LabelsSettings)
    poll: PollSettings = field(default_factory=PollSettings)
    fetch: FetchSettings = field(default_factory=FetchSettings)
    linker: LinkerSettings = field(default_factory=LinkerSettings)
    review: ReviewSettings = field(default_factory=ReviewSettings)
    cascade: CascadeSettings = field(default_factory=CascadeSettings)
    write: WriteSettings = field(default_factory=WriteSettings)
    daemon: DaemonSettings = field(default_factory=DaemonSettings)
    safety: SafetySettings = field(default_factory=SafetySettings)
    evidence: EvidenceSettings = field(default_factory=EvidenceSettings)
    web: WebSettings = field(default_factory=WebSettings)
    backfill: BackfillSettings = field(default_factory=BackfillSettings)
    learning: LearningSettings = field(default_factory=LearningSettings)
    # Where the settings came from, for `status` and error messages.
    source: str = "defaults"
    # Where each key not at its default came from: ("db.url", "environment variable
    # WIKIVEL_DB_URL"), ... (`config show` names the source of every key). Not a section.
    origins: Tuple[Tuple[str, str], ...] = field(default=(), compare=False)

    def replace(self, section: str, **changes: Any) -> "Settings":
        """A copy with some keys of one section changed (used for CLI flag overrides)."""
        current = getattr(self, section)
        return dataclasses.replace(self, **{section: dataclasses.replace(current, **changes)})
