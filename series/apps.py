from django.apps import AppConfig


class SeriesConfig(AppConfig):
    """Recurring bookings, handed over by capacity's create, pages and command (capacity.series_hooks)."""

    name = "series"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from capacity.port import answer_series

        from .api import SeriesAnswerSerializer, create_series
        from .command import book_from_command
        from .views import book_series, occurrence_context

        answer_series(
            api_create=create_series,
            api_answer=SeriesAnswerSerializer,
            book_form=book_series,
            occurrence_card=occurrence_context,
            command=book_from_command,
        )
