"""Playwright against the system Chromium (it cannot download its own here), the demo data set, and
screenshots to BERTH_SCREENSHOTS (e.g. docs/screenshots), else a temp dir."""

import os
from pathlib import Path

import pytest

from chromium import CHROMIUM, CHROMIUM_ARGS

VIEWPORT = {"width": 1366, "height": 900}

# Playwright's event loop is running when live_server creates the test database; Django would refuse.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": VIEWPORT}


@pytest.fixture
def demo(transactional_db, live_server):
    """Build the demo (tenants acme and globex, user operator, three pools) where live_server sees it."""
    from devtools.demo import build_demo

    build_demo()
    return live_server.url


@pytest.fixture
def login(page, demo):
    """Return a function that signs in as a demo user and returns the page."""
    from devtools.demo import demo_password

    def sign_in(username, target_page=None):
        p = target_page or page
        p.goto(f"{demo}/accounts/login/")
        p.fill("#id_username", username)
        p.fill("#id_password", demo_password())
        p.click("button[type=submit]")
        p.wait_for_url(f"{demo}/")
        return p

    return sign_in


@pytest.fixture
def shots(tmp_path):
    """Return a function that saves a page's screenshot as NAME.png and checks it is not blank."""
    folder = Path(os.environ.get("BERTH_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)

    def shoot(page, name):
        path = folder / f"{name}.png"
        page.screenshot(path=str(path))
        assert path.stat().st_size > 10_000
        return path

    return shoot
