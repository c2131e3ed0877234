"""Where the browser tests find Chromium, and whether a missing one may be skipped."""

import os
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SKIP_REASON = f"browser tests need Chromium at {CHROMIUM} (apt-get install -y chromium)"

if os.environ.get("BERTH_REQUIRE_BROWSER") == "1" and not CHROMIUM.exists():
    # CI sets this: there a skipped browser test would hide that nothing was looked at.
    raise RuntimeError(f"BERTH_REQUIRE_BROWSER=1 but {SKIP_REASON}")
