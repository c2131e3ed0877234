"""Start the test provider: migrate its SQLite, add the users and Berth's client, serve on loopback.

Prints "port N" once it listens. Environment: PROVIDER_DB, PROVIDER_KNOBS, PROVIDER_RSA_KEY,
PROVIDER_CLIENT_ID, PROVIDER_CLIENT_SECRET, PROVIDER_REDIRECT_URIS (space-separated).
"""

import os
import sys
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ["DJANGO_SETTINGS_MODULE"] = "oidc_provider.settings"

import django

django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from oauth2_provider.models import Application  # noqa: E402

from oidc_provider.validator import knobs  # noqa: E402


class Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def main():
    call_command("migrate", verbosity=0)
    for username, user in knobs()["users"].items():
        User.objects.create_user(username, password=user.get("password", "pw"))
    Application.objects.create(
        name="berth",
        client_id=os.environ["PROVIDER_CLIENT_ID"],
        client_secret=os.environ["PROVIDER_CLIENT_SECRET"],
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=os.environ["PROVIDER_REDIRECT_URIS"],
        post_logout_redirect_uris=os.environ["PROVIDER_REDIRECT_URIS"],
        algorithm=Application.RS256_ALGORITHM,
        skip_authorization=True,
    )
    server = make_server(
        "127.0.0.1", 0, get_wsgi_application(), server_class=Server, handler_class=QuietHandler
    )
    print(f"port {server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
