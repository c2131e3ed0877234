"""REST API URLs (filled in by the API work)."""

urlpatterns: list = []
