"""Browser URLs (filled in by the web work)."""

urlpatterns: list = []
