"""The code flow as a browser runs it: Berth (the test client), then the provider over real HTTP."""

from urllib.parse import urljoin, urlsplit

import requests


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
