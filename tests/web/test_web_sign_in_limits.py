"""Sign-in limits (django-axes), password reset only with mail, and Berth's own error pages."""

import socket

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client, RequestFactory
from django.views.defaults import server_error

RIGHT = "pw-alice-123"


def sign_in(client, password, username="alice", **extra):
    return client.post("/accounts/login/", {"username": username, "password": password}, **extra)


def test_the_sixth_sign_in_is_refused_even_with_the_right_password(client, acme_user):
    answers = [sign_in(client, f"wrong-{i}") for i in range(5)]
    assert [a.status_code for a in answers[:4]] == [200] * 4  # the form again, with its error
    assert "Please enter a correct username and password" in answers[0].text
    assert answers[4].status_code == 429

    sixth = sign_in(client, RIGHT)
    assert sixth.status_code == 429
    assert "_auth_user_id" not in client.session
    assert client.get("/").status_code == 302  # still signed out


def test_the_locked_page_says_for_how_long_in_the_sites_own_look(client, acme_user):
    for i in range(5):
        sign_in(client, f"wrong-{i}")
    page = sign_in(client, RIGHT).text
    assert "<h1>Sign-in locked for a while</h1>" in page
    assert "Too many wrong passwords for <strong>alice</strong> from this address" in page
    assert "locked for 15 minutes" in page
    assert 'href="/accounts/login/"' in page
    assert '<link rel="stylesheet"' in page


def test_thirty_wrong_passwords_are_not_all_tried(client, acme_user):
    answers = [sign_in(client, f"wrong-{i}").status_code for i in range(30)]
    assert answers.count(200) == 4
    assert answers[4:] == [429] * 26


def test_a_lockout_is_per_username_and_address(client, acme_user, globex_user):
    for i in range(5):
        sign_in(client, f"wrong-{i}")
    # Another user from the same address, and the same user from another address, still sign in.
    assert sign_in(Client(), "pw-bob-123", username="bob").status_code == 302
    other_address = Client(REMOTE_ADDR="10.1.2.3")
    assert sign_in(other_address, RIGHT).status_code == 302


def test_a_right_password_before_the_limit_starts_the_count_again(client, acme_user):
    for i in range(4):
        sign_in(client, f"wrong-{i}")
    assert sign_in(client, RIGHT).status_code == 302
    for i in range(4):
        assert sign_in(Client(), f"again-{i}").status_code == 200


def test_behind_the_tls_proxy_the_address_the_proxy_saw_counts(client, acme_user, settings):
    settings.BERTH_TLS = True
    secure = {"HTTP_X_FORWARDED_PROTO": "https", "secure": True}
    for i in range(5):
        sign_in(client, f"wrong-{i}", HTTP_X_FORWARDED_FOR="203.0.113.7", **secure)
    # Every request comes from the proxy; a caller who claims another address earlier in the
    # header is still counted by the one the proxy appended.
    spoofed = sign_in(client, RIGHT, HTTP_X_FORWARDED_FOR="198.51.100.1, 203.0.113.7", **secure)
    assert spoofed.status_code == 429
    elsewhere = sign_in(Client(), RIGHT, HTTP_X_FORWARDED_FOR="198.51.100.9", **secure)
    assert elsewhere.status_code == 302


@pytest.fixture
def listener():
    """A real socket standing in for a mail server: it records whether anyone connected."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.setblocking(False)
    yield server
    server.close()


def connected(server) -> bool:
    try:
        server.accept()[0].close()
    except BlockingIOError:
        return False
    return True


@pytest.mark.parametrize(
    "url",
    [
        "/accounts/password_reset/",
        "/accounts/password_reset/done/",
        "/accounts/reset/MQ/abc-123/",
        "/accounts/reset/done/",
    ],
)
def test_without_mail_the_reset_pages_say_to_ask_an_operator(client, db, url):
    response = client.get(url)
    assert response.status_code == 404
    assert "Ask an operator to set a new password for you" in response.text


def test_without_mail_a_reset_post_sends_nothing_and_dials_no_one(client, acme_user, settings, listener):
    acme_user.email = "alice@example.com"
    acme_user.save()
    # An SMTP backend pointed at the listener: only the switch keeps the view from dialling it.
    settings.MAIL_CONFIGURED = False
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": listener.getsockname()[1], "timeout": 2},
        }
    }
    response = client.post("/accounts/password_reset/", {"email": "alice@example.com"})
    assert response.status_code == 404
    assert "Password reset is off" in response.text
    assert not connected(listener)
    assert mail.outbox == []


def test_with_a_mail_server_the_reset_sends_its_link(client, acme_user, settings):
    acme_user.email = "alice@example.com"
    acme_user.save()
    settings.MAIL_CONFIGURED = True
    settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    response = client.post("/accounts/password_reset/", {"email": "alice@example.com"})
    assert (response.status_code, response["Location"]) == (302, "/accounts/password_reset/done/")
    assert len(mail.outbox) == 1
    assert "/accounts/reset/" in mail.outbox[0].body


def test_a_mistyped_url_shows_the_not_found_page_without_listing_url_patterns(alice, settings):
    settings.DEBUG = False
    response = alice.get("/pool/h100-prod/")
    assert response.status_code == 404
    assert "<h1>Not found</h1>" in response.text
    assert "URLconf" not in response.text and "admin/" not in response.text


def test_the_server_error_page_needs_no_context_or_database(db, django_assert_num_queries):
    request = RequestFactory().get("/")
    with django_assert_num_queries(0):
        response = server_error(request)
    assert response.status_code == 500
    page = response.content.decode()
    assert "<h1>Something went wrong</h1>" in page
    assert "Nothing you sent was stored half-way" in page


def test_users_made_for_these_tests_sign_in_normally(client, acme_user):
    assert sign_in(client, RIGHT).status_code == 302
    assert User.objects.get(username="alice").is_active


def test_without_a_mail_server_sending_fails_loudly_instead_of_dialling():
    from django.core.mail import EmailMessage

    from config.mail import NoMailServer

    with pytest.raises(RuntimeError, match="Berth sends no mail: set EMAIL_HOST"):
        NoMailServer().send_messages([EmailMessage("hi", "body", to=["a@example.com"])])


def test_a_form_without_its_csrf_token_gets_berths_own_page(acme_user):
    client = Client(enforce_csrf_checks=True)
    response = sign_in(client, RIGHT)
    assert response.status_code == 403
    assert "<h1>Form expired</h1>" in response.text
    assert "CSRF verification failed" not in response.text


def test_without_a_mail_server_a_caller_that_asks_for_silence_sends_nothing():
    from django.core.mail import EmailMessage

    from config.mail import NoMailServer

    assert NoMailServer(fail_silently=True).send_messages([EmailMessage("hi", "body", to=["a@x.org"])]) == 0
