"""A real OpenID provider on loopback for the SSO tests (identity/oidc_provider/), Berth pointed at it,
and the code flow as a browser runs it: Berth (the test client), then the provider over real HTTP.

The fixtures are imported by tests/identity/conftest.py and the browser test.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

HERE = Path(__file__).resolve().parent / "identity"
CLIENT_ID = "berth-test"
CLIENT_SECRET = "berth-test-secret-long-enough-for-an-hs256-key"
REDIRECT_URIS = (
    "http://testserver/oidc/callback/ http://testserver/accounts/login/ http://127.0.0.1/oidc/callback/"
)
PROVIDER_USERS = {"alice": {}, "bob": {}, "carol": {}, "dave": {}, "erin": {}}


class Provider:
    """The running provider: its issuer, and its knobs (users' groups, misbehaviours)."""

    def __init__(self, issuer: str, knobs_path: Path):
        self.issuer = issuer
        self.knobs_path = knobs_path
        self.reset()

    def reset(self) -> None:
        self.knobs = {"users": {name: dict(user) for name, user in PROVIDER_USERS.items()}}
        self.save()

    def save(self) -> None:
        self.knobs_path.write_text(json.dumps(self.knobs))

    def set(self, **knobs) -> None:
        self.knobs.update(knobs)
        self.save()

    def user(self, username: str, **claims) -> None:
        self.knobs["users"][username].update(claims)
        self.save()


@pytest.fixture(scope="session")
def provider(tmp_path_factory):
    folder = tmp_path_factory.mktemp("oidc_provider")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    knobs_path = folder / "knobs.json"
    knobs_path.write_text(json.dumps({"users": PROVIDER_USERS}))
    env = {
        **os.environ,
        "PROVIDER_DB": str(folder / "provider.sqlite3"),
        "PROVIDER_KNOBS": str(knobs_path),
        "PROVIDER_RSA_KEY": pem,
        "PROVIDER_CLIENT_ID": CLIENT_ID,
        "PROVIDER_CLIENT_SECRET": CLIENT_SECRET,
        "PROVIDER_REDIRECT_URIS": REDIRECT_URIS,
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    process = subprocess.Popen(
        [sys.executable, str(HERE / "oidc_provider" / "serve.py")], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        line = process.stdout.readline()
        assert line.startswith("port "), f"the provider did not start: {line!r}"
        yield Provider(f"http://127.0.0.1:{int(line.split()[1])}/o", knobs_path)
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def sso(provider, settings):
    """Berth configured for the provider, as BERTH_OIDC_* would configure it."""
    from identity import discovery

    settings.BERTH_OIDC_ISSUER = provider.issuer
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    provider.reset()
    discovery.forget()
    yield provider
    discovery.forget()
    provider.reset()


def through_provider(
    authorize_url: str, username: str, password: str = "pw", session=None, sign_in=True
) -> str:
    """Sign in at the provider as a browser would; return where it sends the browser back (the callback)."""
    browser = session or requests.Session()
    answer = browser.get(authorize_url, allow_redirects=False)
    if sign_in and answer.status_code == 302 and urlsplit(answer.headers["Location"]).path == "/login/":
        login_url = urljoin(authorize_url, answer.headers["Location"])
        answer = browser.post(
            login_url, data={"username": username, "password": password}, allow_redirects=False
        )
        assert answer.status_code == 302, answer.text
        answer = browser.get(urljoin(login_url, answer.headers["Location"]), allow_redirects=False)
    assert answer.status_code == 302, answer.text[:500]
    return answer.headers["Location"]


def local(url: str) -> str:
    """Return the path and query of a URL on Berth (the test client's testserver)."""
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


def sign_in(client, username: str, *, session=None):
    """Run the whole code flow for `username`: Berth, the provider over HTTP, Berth's callback."""
    start = client.get("/oidc/authenticate/")
    assert start.status_code == 302, start.content[:500]
    callback = through_provider(start["Location"], username, session=session)
    return client.get(local(callback)), callback
