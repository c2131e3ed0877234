"""The mail backend when no mail server is configured: it refuses to send instead of dialling one."""

from django.core.mail.backends.base import BaseEmailBackend


class NoMailServer(BaseEmailBackend):
    """Refuse every message: Berth has no EMAIL_HOST, and Django's default would dial localhost:25."""

    def __init__(self, *, fail_silently=False, **kwargs):
        super().__init__(**kwargs)
        self.quiet = fail_silently

    def send_messages(self, email_messages):
        if self.quiet or not email_messages:
            return 0
        raise RuntimeError("Berth sends no mail: set EMAIL_HOST (README.md, Production) to send it.")
