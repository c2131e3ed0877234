"""Admin for series: read-only, as capacity's bookings are (capacity/admin.py says why)."""

from django.contrib import admin

from capacity.port import Series


@admin.register(Series)
class SeriesAdmin(admin.ModelAdmin):
    """Series are made through the pages, the API, the CLI and series.port, and released there too."""

    list_display = ["id", "tenant", "pool", "rule", "starts_at", "all_or_nothing", "created_by", "created_at"]
    list_filter = ["pool", "all_or_nothing"]
    search_fields = ["id", "tenant__slug", "idempotency_key", "rule"]
    list_select_related = ["tenant", "pool"]

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
