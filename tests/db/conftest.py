"""The database tests, in one folder per part of the code under test.

    placers/     the database half of placement (capacity/placers, capacity/db)
    services/    one use case each (capacity/services, capacity/port.py)
    accounting/  capacity/audit.py, rollups and quota over time
    worker/      run_placer and its processes (capacity/worker.py)
    inventory/   inventory's rows as the database keeps them, the admin, seed_demo

The helper modules stay here (booking.py, racing.py) and are imported by plain name from every
subfolder (`from booking import ask`): this folder is put on sys.path here, before any test module
under it is imported. pytest's default (prepend) import mode puts only each module's own folder
there for it. With no __init__.py, a test module is imported by its basename: keep basenames unique
across tests/.
"""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
