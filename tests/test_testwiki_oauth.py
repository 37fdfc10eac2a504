"""The test wiki's OAuth 2.0 provider behaves like Extension:OAuth where the web app relies on it."""

from __future__ import annotations

import requests

from tests.testwiki import TestWiki
from tests.testwiki.oauth import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from tests.web_support import consent, query_of


def test_code_token_profile_and_their_refusals() -> None:
    with TestWiki.start() as wiki:
        base = wiki.server + "/w/rest.php/oauth2/"
        callback = "http://127.0.0.1:9/cb"
        authorize = (base + "authorize?response_type=code&client_id=" + DEFAULT_CLIENT_ID
                     + "&redirect_uri=" + callback + "&state=xyz")
        back = consent(authorize, "Carla Archiv")
        assert back.startswith(callback + "?") and query_of(back)["state"] == "xyz"
        code = query_of(back)["code"]
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": callback,
                "client_id": DEFAULT_CLIENT_ID}
        wrong = requests.post(base + "access_token", data={**form, "client_secret": "nope"}, timeout=10)
        assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
        ok = requests.post(base + "access_token", data={**form, "client_secret": DEFAULT_CLIENT_SECRET}, timeout=10)
        assert ok.status_code == 200 and ok.json()["token_type"] == "Bearer"
        again = requests.post(base + "access_token", data={**form, "client_secret": DEFAULT_CLIENT_SECRET}, timeout=10)
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"  # a code works once
        token = ok.json()["access_token"]
        profile = requests.get(base + "resource/profile", headers={"Authorization": "Bearer " + token}, timeout=10)
        body = profile.json()
        assert body["username"] == "Carla Archiv" and body["sub"] == "103" and body["blocked"] is False
        assert {"*", "user", "autoconfirmed"} <= set(body["groups"]) and "edit" in body["rights"]
        assert requests.get(base + "resource/profile", headers={"Authorization": "Bearer x"}, timeout=10).status_code == 401
        # A callback outside the registered prefix is refused on the consent page itself.
        foreign = authorize.replace(callback, "https://evil.example/cb")
        assert requests.get(foreign, timeout=10).status_code == 400
