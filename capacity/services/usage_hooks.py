"""What capacity's pages and API show of use, answered by the app that measures it (usage).

capacity never imports usage: usage fills these in from its AppConfig.ready(). Until an app does,
a reservation has no use figures and no series, and a node no use without a booking.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

# name -> the function that answers it: "figures" (reservation ids -> {id: figures}), "series"
# (a reservation -> its GPU % over its window, or None), "unbooked" (a node -> lines to show).
_ANSWERS: dict[str, Callable[..., Any]] = {}


def answer(*, figures: Callable[..., dict], series: Callable, unbooked: Callable[..., list[str]]) -> None:
    """Say who answers (usage's ready() calls this; again is harmless)."""
    _ANSWERS.update(figures=figures, series=series, unbooked=unbooked)


def usage_for(reservation_ids: Iterable[int]) -> dict[int, dict]:
    """Return per reservation id with samples: mean and p95 GPU %, minutes with no process, samples."""
    answer_ = _ANSWERS.get("figures")
    return answer_(reservation_ids) if answer_ else {}


def usage_series(reservation) -> Any:
    """Return the reservation's GPU % over its window so far (None before it starts or any sample)."""
    answer_ = _ANSWERS.get("series")
    return answer_(reservation) if answer_ else None


def unbooked_use_on(node) -> list[str]:
    """Return what runs on a node's GPUs without a booking, as the node page says it."""
    answer_ = _ANSWERS.get("unbooked")
    return answer_(node) if answer_ else []
