"""Start (or attach to) the embedded Postgres used when DATABASE_URL is unset."""

import warnings
from pathlib import Path

DATABASE_NAME = "berth"


def embedded_database_url(pgdata: Path, dbname: str = DATABASE_NAME) -> str:
    """Return a URL for `dbname` on the embedded server in `pgdata`, starting it on demand.

    The server outlives this process (cleanup_mode=None) so later processes attach in ~0 s.
    """
    import psycopg

    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, root shells); the fallback is fine.
        warnings.simplefilter("ignore")
        import pgserver

        server = pgserver.get_server(pgdata, cleanup_mode=None)
    with psycopg.connect(server.get_uri("postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [dbname]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{dbname}"')
    return server.get_uri(dbname)
