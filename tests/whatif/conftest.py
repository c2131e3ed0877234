"""What-if tests, beside the app they test: the simulator, the queue, the worker's job and the pages.

The helper modules of the database and page tests are imported by plain name (`from booking import
ask`, `from databases import this_database_url`, `from web_helpers import HX`): their folders are
put on sys.path here, before any test module under this folder is imported. The page tests' users
and clients come from tests/page_people.py, as tests/web's do.
"""

import sys
from pathlib import Path

from page_people import (  # noqa: F401  (fixtures, shared with tests/web)
    acme_user,
    alice,
    bob,
    globex_user,
    op,
    operator,
    operators_group,
)

TESTS = Path(__file__).resolve().parents[1]
for folder in (TESTS / "db", TESTS / "web"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
