"""The Toolforge deployment as shipped: requirements.txt, .python-version, Procfile,
toolforge/jobs.yaml and toolforge/wikivel.example.toml, read against setup.cfg, the CLI and
the limits docs/deploy.md states (jobs' CPU and memory, 15 s from SIGTERM to SIGKILL, image quota).

What cannot be tested here: the build itself (PyTorch's CPU wheel index is unreachable from
these machines) and the platform's own validation; what can: every file parses, the pins
equal setup.cfg's, every command exists in the CLI with valid options, every resource is
within the documented limits, the health-check path answers, and every state path of the
example config lies under $TOOL_DATA_DIR.
"""

from __future__ import annotations

import configparser
import os
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, Dict, List, Tuple

import click
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from wikivel_bot.cli import main
from wikivel_bot.config import Settings, load_settings
from wikivel_bot.config.paths import default_cache_dir, state_path_lines, user_cache_root
from wikivel_bot.web.secrets_file import load_secrets

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# Keys `toolforge jobs load` knows (jobs-framework-cli's loader, plus `mount` of today's API).
JOB_KEYS = {"name", "command", "image", "schedule", "continuous", "mem", "cpu", "retry", "emails",
            "wait", "mount", "no-filelog", "filelog", "filelog-stdout", "filelog-stderr"}


def setup_cfg() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "setup.cfg", encoding="utf-8")
    return parser


def ml_pins() -> Dict[str, str]:
    """torch and torchvision as setup.cfg's [ml] extra pins them (name -> version)."""
    pins = {}
    for line in setup_cfg()["options.extras_require"]["ml"].splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            if req.name in ("torch", "torchvision"):
                (spec,) = req.specifier
                assert spec.operator == "==", line
                pins[req.name] = spec.version
    return pins


def requirements() -> Tuple[List[str], List[str], List[Requirement]]:
    """(index options, local project lines, requirements) of the root requirements.txt."""
    options, local, reqs = [], [], []
    for raw in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-"):
            options.append(line)
        elif line.startswith("."):
            local.append(line)
        else:
            reqs.append(Requirement(line))  # raises on anything pip would not parse
    return options, local, reqs


# -- 1. the image --------------------------------------------------------------------------


def test_requirements_take_torch_from_the_cpu_index_with_setup_cfg_pins() -> None:
    options, local, reqs = requirements()
    assert options == [f"--extra-index-url {CPU_INDEX}"]
    pinned = {}
    for req in reqs:
        (spec,) = req.specifier
        assert spec.operator == "==", req
        version = Version(spec.version)
        assert version.local == "cpu", f"{req}: the +cpu build, never PyPI's CUDA one"
        pinned[req.name] = version.public
    assert pinned == ml_pins()
    # The project itself, with the extras the tool runs (linker, web, ToolsDB driver).
    (project,) = local
    extras = set(Requirement("wikivel-bot" + project[1:]).extras)
    assert {"ml", "web", "mysql", "backfill"} <= extras <= set(setup_cfg()["options.extras_require"])


def test_the_image_carries_every_extra_its_jobs_and_web_need() -> None:
    """Each job's command (and the Procfile's web) needs the extras its --help names
    (cli/extras.py); the image installs them all, or that job could never start there."""
    from wikivel_bot.cli.extras import COMMAND_EXTRAS

    _, (project,), _ = requirements()
    installed = set(Requirement("wikivel-bot" + project[1:]).extras)
    commands = [shlex.split(job["command"])[1:] for job in jobs()] + [["web"]]
    missing = []
    for argv in commands:
        words = [w for w in argv if not w.startswith("-")]
        for length in (2, 1):  # "dataset build" before "dataset"
            needed = COMMAND_EXTRAS.get(" ".join(words[:length]))
            if needed is not None:
                missing += [f"{' '.join(argv)}: {extra}" for extra in needed[0] if extra not in installed]
                break
    assert not missing, f"requirements.txt lacks: {missing}"


def test_python_version_is_pinned_to_what_setup_cfg_supports() -> None:
    pinned = (ROOT / ".python-version").read_text(encoding="utf-8").strip()
    cfg = setup_cfg()
    assert Version(pinned) in SpecifierSet(cfg["options"]["python_requires"])
    assert pinned == cfg["mypy"]["python_version"]
    assert f"Programming Language :: Python :: {pinned}" in cfg["metadata"]["classifiers"]


def test_the_doc_says_how_to_build_and_what_cannot_be_checked_here() -> None:
    assert "toolforge build start" in DEPLOY and "--use-latest-versions" in DEPLOY
    assert "toolforge build quota" in DEPLOY
    assert CPU_INDEX in DEPLOY and "cannot be reached from" in DEPLOY


# -- 2. jobs within the limits ---------------------------------------------------------------


def documented_limits() -> Dict[str, float]:
    """The sentence of docs/deploy.md the jobs are held to."""
    found = re.search(r"at most (\d+(?:\.\d+)?) CPU and (\d+) GiB of memory per job, "
                      r"(\d+) CPUs and (\d+) GiB per tool", DEPLOY)
    assert found, "docs/deploy.md must state the per-job and per-tool limits"
    job_cpu, job_gib, tool_cpu, tool_gib = (float(g) for g in found.groups())
    return {"job_cpu": job_cpu, "job_mem": job_gib * 2**30, "tool_cpu": tool_cpu, "tool_mem": tool_gib * 2**30}


def quantity(text: Any) -> float:
    """A Kubernetes quantity as jobs.yaml and `--mem` take it: 512Mi, 3Gi, 0.5, 1."""
    found = re.fullmatch(r"(\d+(?:\.\d+)?)(Mi|Gi)?", str(text).strip())
    assert found, f"not a quantity: {text!r}"
    number, unit = found.groups()
    return float(number) * {None: 1, "Mi": 2**20, "Gi": 2**30}[unit]


def jobs() -> List[Dict[str, Any]]:
    loaded = yaml.safe_load((ROOT / "toolforge" / "jobs.yaml").read_text(encoding="utf-8"))
    assert isinstance(loaded, list) and loaded
    return loaded


def resolve(argv: List[str]) -> Tuple[click.Command, click.Context]:
    """The wikivel-bot command ``argv`` names, its options parsed and checked by click (an
    unknown command or option, or a value out of range, raises click.UsageError)."""
    cmd: click.Command = main
    ctx, name, args = None, "wikivel-bot", list(argv)
    while True:
        ctx = cmd.make_context(name, args, parent=ctx)
        if not isinstance(cmd, click.Group):
            return cmd, ctx
        with warnings.catch_warnings():  # click 8.2+ deprecates protected_args
            warnings.simplefilter("ignore", DeprecationWarning)
            rest = [*ctx.protected_args, *ctx.args]
        name, found, args = cmd.resolve_command(ctx, rest)
        assert found is not None
        cmd = found


def test_resolve_refuses_what_the_cli_does_not_have() -> None:
    for bad in (["nosuch"], ["run", "--bogus"], ["backfill", "--num-cpus", "0"]):
        with pytest.raises(click.UsageError):
            resolve(bad)


def test_every_job_command_exists_in_the_cli() -> None:
    names = [job["name"] for job in jobs()]
    assert len(names) == len(set(names)) and {"migrate", "daemon", "backfill"} <= set(names)
    for job in jobs():
        assert set(job) <= JOB_KEYS, f"{job['name']}: unknown keys {set(job) - JOB_KEYS}"
        argv = shlex.split(job["command"])
        assert argv[0] == "wikivel-bot", job["command"]
        resolve(argv[1:])
    by_name = {job["name"]: job for job in jobs()}
    assert resolve(shlex.split(by_name["daemon"]["command"])[1:])[0].name == "run"
    assert by_name["daemon"]["continuous"] is True
    assert resolve(shlex.split(by_name["migrate"]["command"])[1:])[0].name == "upgrade"
    assert by_name["migrate"].get("wait") is True and "continuous" not in by_name["migrate"]
    assert resolve(shlex.split(by_name["backfill"]["command"])[1:])[0].name == "backfill"


def test_every_job_is_within_the_documented_limits() -> None:
    limits = documented_limits()
    assert limits == {"job_cpu": 1, "job_mem": 4 * 2**30, "tool_cpu": 4, "tool_mem": 8 * 2**30}
    total_mem = total_cpu = 0.0
    for job in jobs():
        # Resources explicit (the defaults are far below what the model needs), and the
        # tool's NFS mounted: settings, pywikibot's config, the caches.
        assert "mem" in job and "cpu" in job and job.get("mount") == "all", job["name"]
        mem, cpu = quantity(job["mem"]), quantity(job["cpu"])
        assert 0 < mem <= limits["job_mem"] and 0 < cpu <= limits["job_cpu"], job["name"]
        # Logs on stdout/stderr, where `toolforge jobs logs` reads them.
        assert not job.get("filelog") and not any(k.startswith("filelog-") for k in job), job["name"]
        ctx = resolve(shlex.split(job["command"])[1:])[1]
        if "num_cpus" in ctx.params:
            assert ctx.params["num_cpus"] is not None and ctx.params["num_cpus"] <= cpu, job["name"]
        total_mem += mem
        total_cpu += cpu
    web_mem = re.search(r"toolforge webservice buildservice start [^\n`]*--mem (\S+)", DEPLOY)
    assert web_mem, "docs/deploy.md starts the webservice with --mem"
    web = quantity(web_mem.group(1))
    assert web <= limits["job_mem"]
    # Everything at once (a backfill beside the daemon and the web) fits the tool's quota.
    # (+1: the webservice takes at most one CPU, like any job.)
    assert total_mem + web <= limits["tool_mem"] and total_cpu + 1 <= limits["tool_cpu"]


# -- 3. the web ------------------------------------------------------------------------------


def test_the_webservice_binds_port_8000_and_its_health_check_answers(tmp_path: Path) -> None:
    procfile = dict(line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line.strip())
    cmd, ctx = resolve(shlex.split(procfile["web"])[1:])
    assert cmd.name == "web" and ctx.params == {"host": "0.0.0.0", "port": 8000}
    start = re.search(r"toolforge webservice buildservice start [^\n`]*", DEPLOY)
    assert start and "--health-check-path /healthz" in start.group(0) and "--mount=all" in start.group(0)

    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.engine import create_engine_for
    from wikivel_bot.queue.store import Store
    from wikivel_bot.web.app import create_app

    engine = create_engine_for(f"sqlite:///{tmp_path / 'q.sqlite'}")
    migrate.upgrade(engine)
    store = Store(engine)
    try:
        app = create_app(Settings(), store, items=False)
        answer = app.test_client().get("/healthz")
        assert answer.status_code == 200 and answer.get_data(as_text=True) == "ok\n"
    finally:
        store.close()


# -- 4. state under TOOL_DATA_DIR, caches in the user's cache directory -----------------------


def test_the_toolforge_config_keeps_every_state_path_under_tool_data_dir() -> None:
    settings = load_settings(ROOT / "toolforge" / "wikivel.example.toml", env={})
    data = "/data/project/wikivel"
    env = {"TOOL_DATA_DIR": data, "HF_HOME": f"{data}/cache/huggingface", "HOME": "/home/wikivel"}
    lines = state_path_lines(settings, env)
    text = "\n".join(lines)
    for what, where in (("label index", f"{data}/cache/label-index"),
                        ("item thumbnails", f"{data}/cache/item-images"),
                        ("model weights", f"{data}/cache/huggingface/hub"),
                        ("Hugging Face cache", f"{data}/cache/huggingface/hub")):
        assert f"#   {what}: {where}  (" in text, what
    labels_dir = settings.linker.labels_dir
    assert f"#   label set: {labels_dir or 'the starter set in the package'}  (" in text
    assert "WARNING" not in text
    # Without HF_HOME the weights would go to the pod's ~/.cache, lost at every restart.
    unset = "\n".join(state_path_lines(settings, {"TOOL_DATA_DIR": data, "HOME": "/home/wikivel"}))
    assert "Hugging Face cache: /home/wikivel/.cache/huggingface/hub" in unset
    assert "WARNING: not under $TOOL_DATA_DIR" in unset


def test_the_toolforge_config_starts_as_a_dry_run_until_the_bot_request_allows_writing() -> None:
    """docs/deploy.md asks for days of dry run before the bot request: the example config
    a tool copies must not edit Commons, and must say when to change that."""
    example = ROOT / "toolforge" / "wikivel.example.toml"
    settings = load_settings(example, env={})
    assert settings.write.dry_run is True or settings.write.enabled is False
    text = example.read_text(encoding="utf-8")
    write_section = text.split("[write]", 1)[1].split("\n[", 1)[0]
    assert "Commons:Bots/Requests" in write_section and "dry_run = false" in write_section
    flat = " ".join(DEPLOY.split())
    assert "`[write] dry_run = true`" in flat and "`[write] dry_run = false`" in flat


def test_the_toolforge_label_set_is_the_starter_set_or_built_by_a_documented_step() -> None:
    """A labels_dir no step fills would stop the daemon at its first start: either the
    starter set shipped in the package (empty), or docs/deploy.md builds it right there."""
    from wikivel_bot.labels import default_label_set

    settings = load_settings(ROOT / "toolforge" / "wikivel.example.toml", env={})
    labels_dir = settings.linker.labels_dir
    if labels_dir:
        built = re.findall(r"wikivel-bot labels build [^`]*--out\s+(\S+)", DEPLOY)
        assert labels_dir in [b.rstrip("`") for b in built], (
            f"{labels_dir}: no step of docs/deploy.md builds the label set there")
    else:
        assert len(default_label_set(labels_dir)) > 0
        assert "starter label set" in DEPLOY


def test_caches_default_to_the_users_cache_directory(tmp_path: Path) -> None:
    assert user_cache_root({"XDG_CACHE_HOME": "/x/cache"}) == (Path("/x/cache"), "$XDG_CACHE_HOME")
    home = Path(os.path.expanduser("~"))
    # Unset, or relative (the XDG spec says to ignore it): ~/.cache.
    assert default_cache_dir({}) == str(home / ".cache" / "wikivel-bot")
    assert default_cache_dir({"XDG_CACHE_HOME": "rel/cache"}) == str(home / ".cache" / "wikivel-bot")
    # The test session has its own (tests/conftest.py): nothing lands in the real ~/.cache.
    xdg = os.environ["XDG_CACHE_HOME"]
    assert not Path(xdg).resolve().is_relative_to(home / ".cache")
    assert Settings().linker.cache_dir == str(Path(xdg) / "wikivel-bot")
    assert load_settings(env={}).linker.cache_dir == str(Path(xdg) / "wikivel-bot")


def _cli(cwd: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIVEL_")}
    env.update({"PYTHONPATH": str(ROOT), **extra})
    return subprocess.run([sys.executable, "-m", "wikivel_bot", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_config_show_names_the_cache_directory_and_its_source(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    shown = _cli(tmp_path, "config", "show", XDG_CACHE_HOME=str(xdg))
    assert shown.returncode == 0, shown.stderr
    assert f'cache_dir = "{xdg}/wikivel-bot"' in shown.stdout
    assert f"#   cache directory: {xdg}/wikivel-bot  (linker.cache_dir, default: $XDG_CACHE_HOME/wikivel-bot)" in shown.stdout
    assert f"#   label index: {xdg}/wikivel-bot/label-index" in shown.stdout
    assert not (tmp_path / "cache").exists()
    moved = _cli(tmp_path, "config", "show", XDG_CACHE_HOME=str(xdg), WIKIVEL_LINKER_CACHE_DIR=str(tmp_path / "c"))
    assert f"#   cache directory: {tmp_path / 'c'}  (linker.cache_dir)" in moved.stdout


def test_a_first_run_writes_its_caches_to_the_users_cache_directory(tmp_path: Path) -> None:
    """The first `suggest` builds its label index and encoder caches under
    $XDG_CACHE_HOME/wikivel-bot, and nothing in the working directory (a checkout)."""
    from tests.linker_support import tiny_model_file, write_animals_artifact

    labels = write_animals_artifact(tmp_path / "animals")
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    pwb = tmp_path / "pywikibot"
    pwb.mkdir()
    image = ROOT / "tests" / "testwiki" / "fixtures" / "files" / "Red_apple.png"
    out = _cli(checkout, "suggest", "--model", str(tiny_model_file()), "--weights", "random", "--device", "cpu",
               "--labels", str(labels), str(image), XDG_CACHE_HOME=str(tmp_path / "xdg"), PYWIKIBOT_DIR=str(pwb),
               PYWIKIBOT_NO_USER_CONFIG="2", WIKIVEL_SITE_OPERATOR_CONTACT="User:Tester")
    assert out.returncode == 0, out.stderr
    assert list(checkout.iterdir()) == []
    assert any((tmp_path / "xdg" / "wikivel-bot" / "label-index").iterdir())


# -- 6. secrets from `toolforge envvars` -----------------------------------------------------


def test_web_secrets_come_from_the_environment_and_are_never_shown(tmp_path: Path) -> None:
    oauth, session = "oauth-secret-value-1234", "s" * 40
    env = {"WIKIVEL_OAUTH_CLIENT_SECRET": oauth, "WIKIVEL_SESSION_SECRET": session}
    loaded = load_secrets("", env=env)
    assert (loaded.oauth_client_secret, loaded.session_secret, loaded.ephemeral) == (oauth, session, False)
    # The variables win over the file.
    path = tmp_path / "secrets.toml"
    path.write_text('oauth_client_secret = "from-file"\n')
    assert load_secrets(str(path), env=env).oauth_client_secret == oauth
    assert load_secrets(str(path), env={}).oauth_client_secret == "from-file"
    with pytest.raises(Exception, match="WIKIVEL_SESSION_SECRET: must be at least 32 characters"):
        load_secrets("", env={"WIKIVEL_SESSION_SECRET": "short"})
    # They are not settings: loading accepts them, `config show` never prints them.
    load_settings(env=env)
    shown = _cli(tmp_path, "config", "show", XDG_CACHE_HOME=str(tmp_path / "x"), **env)
    assert shown.returncode == 0, shown.stderr
    assert oauth not in shown.stdout + shown.stderr and session not in shown.stdout + shown.stderr
    for name in ("WIKIVEL_DB_URL", "WIKIVEL_CONFIG", "WIKIVEL_OAUTH_CLIENT_SECRET", "WIKIVEL_SESSION_SECRET"):
        assert f"toolforge envvars create {name}" in DEPLOY, name


# -- 7. the bot request ------------------------------------------------------------------------


def test_bot_request_is_filled_in_from_the_configuration(tmp_path: Path) -> None:
    pwb = tmp_path / "pywikibot"
    pwb.mkdir()
    (pwb / "user-config.py").write_text(
        "family = 'commons'\nmylang = 'commons'\nusernames['commons']['commons'] = 'WikivelBot'\n"
        "put_throttle = 20\nwrite_maxlag = 7\n")
    out = _cli(tmp_path, "config", "bot-request", PYWIKIBOT_DIR=str(pwb), XDG_CACHE_HOME=str(tmp_path / "x"),
               WIKIVEL_DAEMON_STOP_PAGE="User:WikivelBot/Stop", WIKIVEL_SITE_OPERATOR_CONTACT="User:Ann",
               WIKIVEL_WRITE_BATCH_SIZE="10", WIKIVEL_DAEMON_LINK_INTERVAL_S="30")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith("=== [[User:WikivelBot|WikivelBot]] ===\n") and text.rstrip().endswith("~~~~")
    assert "* '''Operator:''' [[User:Ann]]" in text
    assert "* '''Maximum edit rate (e.g. edits per minute):''' 3 (pywikibot put_throttle = 20 s" in text
    assert "* '''Maxlag:''' 7 " in text
    assert "* '''Stop page:''' [[User:WikivelBot/Stop]]" in text and '"run"' in text
    assert "Adding depicts [[d:Q146|Q146]] (house cat, prominent)" in text and "batch b-" in text
    # A write round smaller than the throttle allows bounds the rate instead.
    slow = _cli(tmp_path, "config", "bot-request", PYWIKIBOT_DIR=str(pwb), XDG_CACHE_HOME=str(tmp_path / "x"),
                WIKIVEL_WRITE_BATCH_SIZE="1", WIKIVEL_DAEMON_LINK_INTERVAL_S="60")
    assert "edits per minute):''' 1 (" in slow.stdout
    assert "Stop page:''' (not set" in slow.stdout
    # Everything filled in: stderr is silent. Placeholders left: one warning each, naming
    # the setting, on stderr (stdout stays the text to paste).
    assert "warning" not in out.stderr, out.stderr
    assert [line for line in slow.stderr.splitlines() if line.startswith("warning: ")] == [
        "warning: the operator is the placeholder 'User:YourName': set site.operator_contact "
        "(or WIKIVEL_SITE_OPERATOR_CONTACT) to your own user page",
        "warning: the stop page is not set: set daemon.stop_page (or WIKIVEL_DAEMON_STOP_PAGE), "
        "e.g. User:<the bot account>/Stop, a page holding the run text"], slow.stderr
    assert "* '''Operator:''' [[User:YourName]]" in slow.stdout and "warning" not in slow.stdout


def test_bot_request_from_the_unfilled_examples_warns_about_each_placeholder(tmp_path: Path) -> None:
    """The Toolforge example ships operator_contact = "User:YourName": copied and never
    filled in, the request would go out naming nobody. No pywikibot account either."""
    pwb = tmp_path / "pywikibot"
    pwb.mkdir()
    out = _cli(tmp_path, "config", "bot-request", PYWIKIBOT_DIR=str(pwb), PYWIKIBOT_NO_USER_CONFIG="2",
               XDG_CACHE_HOME=str(tmp_path / "x"), WIKIVEL_CONFIG=str(ROOT / "toolforge" / "wikivel.example.toml"))
    assert out.returncode == 0, out.stderr
    assert "[[User:YourName]]" in out.stdout and "[[User:YourBot|YourBot]]" in out.stdout
    warnings = [line for line in out.stderr.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 2, out.stderr
    assert "placeholder 'YourBot'" in warnings[0] and "usernames['commons']['commons']" in warnings[0]
    assert "placeholder 'User:YourName'" in warnings[1] and "site.operator_contact" in warnings[1]


# -- 8. a big backfill: the figures are the benchmark's -----------------------------------------


def test_the_big_backfill_figures_come_from_the_benchmarks() -> None:
    """docs/deploy.md's one-core table: its files/s are docs/benchmarks.md's (AMX) and
    docs/backfill.md's (the earlier fp32 run), and its hours for 1M files follow from them."""
    bench = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    cost = (ROOT / "docs" / "backfill.md").read_text(encoding="utf-8")
    amx = re.search(r"sum to about (\d+), i\.e\. about \*\*(\d+) files/s per core", bench)
    fp32 = re.search(r"gave (\d+) CPU ms per file for the\s+link stage in fp32, i\.e\. about ([\d.]+) files/s", cost)
    assert amx and fp32, "the benchmark's per-core figures moved: update docs/deploy.md with them"
    assert f"about **{amx.group(1)} CPU ms per file**" in DEPLOY and f"**{fp32.group(1)} CPU ms per file**" in DEPLOY
    table = re.findall(r"^\| (AMX \(bf16\)|no AMX/AVX512-BF16 \(fp32\)) \| ≈ ([\d.]+) \| ≈ (\d+) hours", DEPLOY, re.M)
    rows = {row: (float(rate), int(hours)) for row, rate, hours in table}
    assert rows.keys() == {"AMX (bf16)", "no AMX/AVX512-BF16 (fp32)"}, rows
    for row, rate in (("AMX (bf16)", float(amx.group(2))), ("no AMX/AVX512-BF16 (fp32)", float(fp32.group(2)))):
        shown, hours = rows[row]
        assert shown == rate, (row, shown, rate)
        assert hours == round(1_000_000 / rate / 3600), (row, hours)
    # And it says what a tool can run: one CPU per job, no GPU; bigger runs on Cloud VPS.
    assert "jobs of **1 CPU** each" in DEPLOY and "Cloud VPS Ray cluster" in DEPLOY
