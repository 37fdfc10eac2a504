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


def test_pkce_binds_the_code_to_the_verifier() -> None:
    import base64
    import hashlib

    with TestWiki.start() as wiki:
        base = wiki.server + "/w/rest.php/oauth2/"
        callback = "http://127.0.0.1:9/cb"
        verifier = "v" * 43
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        authorize = (base + "authorize?response_type=code&client_id=" + DEFAULT_CLIENT_ID + "&redirect_uri="
                     + callback + "&state=s&code_challenge=" + challenge + "&code_challenge_method=S256")
        form = {"grant_type": "authorization_code", "redirect_uri": callback, "client_id": DEFAULT_CLIENT_ID,
                "client_secret": DEFAULT_CLIENT_SECRET}
        for sent, status in (({}, 400), ({"code_verifier": "w" * 43}, 400), ({"code_verifier": verifier}, 200)):
            code = query_of(consent(authorize, "Carla Archiv"))["code"]
            answer = requests.post(base + "access_token", data={**form, "code": code, **sent}, timeout=10)
            assert answer.status_code == status, (sent, answer.text)
        assert requests.get(authorize.replace("S256", "S512"), timeout=10).status_code == 400


def test_list_users_and_the_block_control_show_what_an_admin_did() -> None:
    with TestWiki.start() as wiki:
        def users() -> dict:
            return requests.get(wiki.api_url, params={"action": "query", "list": "users", "format": "json",
                                                      "ususers": "Carla Archiv|Nobody Here",
                                                      "usprop": "groups|blockinfo"}, timeout=10).json()["query"]["users"]

        carla, nobody = users()
        assert "autoconfirmed" in carla["groups"] and "blockid" not in carla and "missing" in nobody
        done = requests.post(wiki.server + "/_control/block", json={"user": "Carla Archiv", "groups": []}, timeout=10)
        assert done.json() == {"user": "Carla Archiv", "blocked": True, "groups": []}
        carla, _ = users()
        assert carla["blockid"] and carla["groups"] == ["*", "user"]
        assert "blockpartial" not in carla  # formatversion 1 leaves a false flag out, as MediaWiki does
        # A partial block: list=users says so, list=blocks gives the restrictions in MediaWiki's format.
        partial = requests.post(wiki.server + "/_control/block", json={
            "user": "Carla Archiv", "partial": {"pages": [{"id": 77, "ns": 6, "title": "File:A.jpg"}],
                                                "namespaces": [2], "actions": ["upload"]}}, timeout=10).json()
        assert partial["restrictions"]["namespaces"] == [2]
        assert "blockpartial" in users()[0]
        (found,) = requests.get(wiki.api_url, params={
            "action": "query", "list": "blocks", "bkusers": "Carla Archiv", "bkprop": "id|flags|restrictions",
            "format": "json", "formatversion": "2"}, timeout=10).json()["query"]["blocks"]
        assert found["id"] == carla["blockid"] and found["partial"] is True
        assert found["restrictions"] == {"pages": [{"id": 77, "ns": 6, "title": "File:A.jpg"}],
                                         "namespaces": [2], "actions": ["upload"]}
        requests.post(wiki.server + "/_control/block", json={"user": "Carla Archiv"}, timeout=10)  # sitewide again
        assert requests.post(wiki.server + "/_control/block", json={"user": "Nobody Here"}, timeout=10).status_code == 400
