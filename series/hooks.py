"""What the series app answers capacity's ways into a series with (capacity.series_hooks)."""

from capacity.port import answer_series

from .api import SeriesAnswerSerializer, create_series
from .command import book_from_command
from .views import book_series, occurrence_context


def register() -> None:
    """Answer each way in: the API's create and answer, the booking form, an occurrence's card, the CLI."""
    answer_series(
        api_create=create_series,
        api_answer=SeriesAnswerSerializer,
        book_form=book_series,
        occurrence_card=occurrence_context,
        command=book_from_command,
    )
