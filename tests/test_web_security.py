"""Login, authorisation and the security hooks of the web review (Flask's test client; the
OAuth 2.0 dance runs over real HTTP against the test wiki)."""

from __future__ import annotations

from pathlib import Path

import requests

from tests.review_support import add_file, decision_rows
from tests.testwiki.oauth import DEFAULT_CLIENT_ID
from tests.web_support import (  # noqa: F401 - fixtures are used by name
    BLOCKED,
    NEWBIE,
    OPERATOR,
    consent,
    csrf_of,
    login,
    make_app,
    post_decision,
    query_of,
    seed,
    web_queue,
    webwiki,
)
from wikivel_bot.errors import ConfigError
from wikivel_bot.queue.engine import create_engine_for
from wikivel_bot.queue.store import Store
from wikivel_bot.web.oauth import safe_next
from wikivel_bot.web.reviewer import Reviewer
from wikivel_bot.web.secrets_file import load_secrets
from wikivel_bot.config import WebSettings

import pytest

EVIL = '<script>alert("pwned")</script>'


def test_login_reads_name_groups_and_blocked_flag_from_the_wiki(webwiki, web_queue) -> None:
    client = make_app(webwiki, web_queue).test_client()
    start = client.get("/login?next=/grid")
    params = query_of(start.headers["Location"])
    assert start.headers["Location"].startswith(webwiki.server + "/w/rest.php/oauth2/authorize?")
    assert params["client_id"] == DEFAULT_CLIENT_ID and params["response_type"] == "code" and params["state"]
    callback = consent(start.headers["Location"], BLOCKED)
    done = client.get(callback.split("://", 1)[1].split("/", 1)[1].join(["/", ""]))
    assert done.status_code == 302 and done.headers["Location"] == "/grid"
    you = client.get("/api/stats").json["you"]
    assert you == {"name": BLOCKED, "may_decide": False, "decisions": you["decisions"],
                   "decisions_today": you["decisions_today"]}
    # The profile endpoint the app used: a real token, refused without one.
    assert requests.get(webwiki.server + "/w/rest.php/oauth2/resource/profile", timeout=10).status_code == 401


def test_who_may_decide(webwiki, web_queue) -> None:
    seed(web_queue)
    for user, allowed in ((NEWBIE, False), (BLOCKED, False), ("Bob Photographer", True), (OPERATOR, True)):
        client = make_app(webwiki, web_queue).test_client()
        login(client, user)
        answer = post_decision(client, csrf_of(client), "M10001", "Q146", "skip")
        assert answer.status_code == (200 if allowed else 403), (user, answer.json)
        if not allowed:
            assert user in answer.json["error"]
            page = client.get("/review").get_data(as_text=True)
            assert ("blocked" in page) if user == BLOCKED else ("may look but not decide" in page)
    # An allow-list entry lets a user outside the groups decide; a block still wins.
    for user, status in ((NEWBIE, 200), (BLOCKED, 403)):
        client = make_app(webwiki, web_queue, allowed_users=(NEWBIE, BLOCKED)).test_client()
        login(client, user)
        assert post_decision(client, csrf_of(client), "M10002", "Q146", "skip").status_code == status


def test_reviewer_rules() -> None:
    web = WebSettings(allowed_groups=("autoconfirmed",), allowed_users=("User:Nora_newcomer",), operators=("Olga",))
    assert Reviewer("Nora newcomer").may_decide(web)
    assert not Reviewer("Someone", groups=("user",)).may_decide(web)
    assert Reviewer("Olga").may_decide(web) and Reviewer("Olga").is_operator(web)
    assert not Reviewer("Olga", blocked=True).is_operator(web)
    assert not Reviewer("Ann", groups=("autoconfirmed",), blocked=True).may_decide(web)


def test_cancelled_stale_and_foreign_logins_are_refused(webwiki, web_queue) -> None:
    client = make_app(webwiki, web_queue).test_client()
    start = client.get("/login")
    cancelled = consent(start.headers["Location"], "Alice Uploader", decision="cancel")
    assert query_of(cancelled)["error"] == "access_denied"
    assert client.get("/oauth/callback?" + cancelled.split("?", 1)[1]).status_code == 403
    # A callback this browser did not start (login CSRF): refused, nobody logged in.
    other = make_app(webwiki, web_queue).test_client()
    foreign = consent(other.get("/login").headers["Location"], "Alice Uploader")
    assert client.get("/oauth/callback?" + foreign.split("?", 1)[1]).status_code == 400
    assert "you" not in client.get("/api/stats").json
    # After login, no open redirect to another host.
    third = make_app(webwiki, web_queue).test_client()
    assert login(third, "Alice Uploader", next_path="//evil.example/x").headers["Location"] == "/"
    # Nor by the spellings browsers read as "//" (a backslash; a tab or newline they drop).
    for sneaky in ("/\\evil.example", "\\\\evil.example", "/\t/evil.example", "/\n/evil.example", "https://evil.example"):
        assert safe_next(sneaky) == "/", sneaky
    assert safe_next("/grid?item=Q146&after=2") == "/grid?item=Q146&after=2"


def test_login_not_configured_says_so(webwiki, web_queue) -> None:
    client = make_app(webwiki, web_queue, oauth_client_id="").test_client()
    answer = client.get("/login")
    assert answer.status_code == 503 and b"web.oauth_client_id" in answer.data


def test_wiki_strings_are_escaped(webwiki, web_queue) -> None:
    add_file(web_queue, 10001, [("Q146", 0.9, '<img src=x onerror="alert(1)">', EVIL)], description=EVIL,
             categories=(EVIL,), title="File:<b>bold</b>.jpg", notes=(EVIL,))
    client = make_app(webwiki, web_queue, items=None).test_client()
    page = client.get("/review").get_data(as_text=True)
    assert "<script>alert" not in page and "<img src=x" not in page and "<b>bold" not in page
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in page
    api = client.get("/api/files/M10001")
    assert api.mimetype == "application/json" and api.json["description"] == EVIL


def test_security_headers_and_cookie(webwiki, web_queue) -> None:
    client = make_app(webwiki, web_queue).test_client()
    for path in ("/", "/api/stats", "/healthz"):
        headers = client.get(path).headers
        csp = headers["Content-Security-Policy"]
        assert "script-src 'self';" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
        assert headers["X-Frame-Options"] == "DENY" and headers["X-Content-Type-Options"] == "nosniff"
    cookie = make_app(webwiki, web_queue).test_client().get("/").headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" not in cookie
    secure = make_app(webwiki, web_queue, public_url="https://wikivel.example.org").test_client()
    assert "Secure" in secure.get("/").headers["Set-Cookie"]
    # No inline script anywhere: every <script> has a src.
    page = client.get("/review").get_data(as_text=True)
    assert "<script>" not in page


def test_logout_and_revert_need_the_csrf_token(webwiki, web_queue) -> None:
    client = make_app(webwiki, web_queue).test_client()
    login(client, "Alice Uploader")
    assert client.post("/logout").status_code == 403
    assert client.post("/batches/b-1/revert").status_code == 403
    assert client.post("/batches/b-1/revert", data={"csrf_token": csrf_of(client)}).status_code == 403  # not operator
    assert client.post("/logout", data={"csrf_token": csrf_of(client)}).status_code == 302
    assert "you" not in client.get("/api/stats").json


def test_only_operators_revert(webwiki, web_queue) -> None:
    calls = []
    app = make_app(webwiki, web_queue)
    app.extensions["wikivel"].reverter = lambda batch, who: calls.append((batch, who)) or ["1 statements removed"]
    client = app.test_client()
    login(client, OPERATOR)
    answer = client.post("/batches/b-7/revert", data={"csrf_token": csrf_of(client)})
    # POST/redirect/GET: the batch page shows the outcome once, and a reload re-posts nothing.
    assert answer.status_code == 303 and calls == [("b-7", OPERATOR)]
    assert answer.headers["Location"].endswith("/batches/b-7")


def test_healthz(webwiki, web_queue, tmp_path: Path) -> None:
    assert make_app(webwiki, web_queue).test_client().get("/healthz").status_code == 200
    gone = Store(create_engine_for(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.sqlite'}"))
    answer = make_app(webwiki, gone).test_client().get("/healthz")
    assert answer.status_code == 503 and b"queue unreachable" in answer.data


def test_secrets_file(tmp_path: Path) -> None:
    path = tmp_path / "secrets.toml"
    path.write_text('oauth_client_secret = "abc"\nsession_secret = "' + "k" * 40 + '"\n')
    loaded = load_secrets(str(path))
    assert loaded.oauth_client_secret == "abc" and not loaded.ephemeral and "abc" not in repr(loaded)
    path.write_text('oauth_client_secret = "abc"\npassword = "hunter2"\n')
    with pytest.raises(ConfigError, match="unknown key password") as err:
        load_secrets(str(path))
    assert "hunter2" not in str(err.value)
    with pytest.raises(ConfigError, match="cannot read"):
        load_secrets(str(tmp_path / "missing.toml"))
    assert load_secrets("").ephemeral


def test_web_settings_are_validated() -> None:
    from wikivel_bot.config import load_settings

    with pytest.raises(ConfigError, match="WIKIVEL_WEB_PORT: web.port must be between 0 and 65535"):
        load_settings(env={"WIKIVEL_WEB_PORT": "70000"})
    with pytest.raises(ConfigError, match="web.decisions_per_minute must be between 1"):
        load_settings(env={"WIKIVEL_WEB_DECISIONS_PER_MINUTE": "0"})
    with pytest.raises(ConfigError, match="web.public_url"):
        WebSettings(public_url="wikivel.example.org")


def test_decisions_unchanged_by_refused_requests(webwiki, web_queue) -> None:
    seed(web_queue)
    client = make_app(webwiki, web_queue).test_client()
    login(client, NEWBIE)
    post_decision(client, csrf_of(client), "M10001", "Q146", "approve")
    assert decision_rows(web_queue) == []


def test_wsgi_factory_builds_the_app_from_the_environment(webwiki, tmp_path: Path, monkeypatch) -> None:
    """What gunicorn calls on Toolforge: settings from WIKIVEL_* variables, the same app."""
    from wikivel_bot.cli import wsgi
    from wikivel_bot.queue import migrate

    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    migrate.upgrade(create_engine_for(url))
    monkeypatch.setenv("WIKIVEL_DB_URL", url)
    monkeypatch.setenv("WIKIVEL_SITE_API_URL", webwiki.api_url)
    monkeypatch.setenv("WIKIVEL_WEB_OAUTH_CLIENT_ID", DEFAULT_CLIENT_ID)
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('oauth_client_secret = "x"\n')
    monkeypatch.setenv("WIKIVEL_WEB_SECRETS_FILE", str(secrets))
    monkeypatch.chdir(tmp_path)
    client = wsgi.create().test_client()
    assert client.get("/healthz").status_code == 200
    assert client.get("/login").headers["Location"].startswith(webwiki.server + "/w/rest.php/oauth2/authorize")


def test_web_command_says_in_one_line_when_the_port_is_taken(tmp_path: Path) -> None:
    import socket

    from click.testing import CliRunner

    from wikivel_bot.cli import main
    from wikivel_bot.queue import migrate

    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    migrate.upgrade(create_engine_for(url))
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        result = CliRunner().invoke(main, ["--db-url", url, "web", "--port", str(port)])
    finally:
        taken.close()
    assert result.exit_code == 2, result.output
    assert f"error: cannot listen on 127.0.0.1:{port}" in result.output
    assert "Traceback" not in result.output
