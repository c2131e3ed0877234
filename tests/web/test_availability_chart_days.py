"""The availability chart's day labels: 14 of them whatever the hour the page is drawn."""

from datetime import UTC, datetime

import pytest

from capacity.placement.availability import HOUR_MS, Availability, hour_starts
from capacity.views.availability_chart import build_chart

LABEL_HALF_WIDTH = 18  # "Fri 18" at the chart's font size, centred on its noon


def chart_at(now: datetime):
    starts = hour_starts(int(now.timestamp() * 1000), 14 * 24)
    found = Availability(
        starts=starts,
        end=starts[-1] + HOUR_MS,
        totals={"gpu": 8},
        free={"gpu": tuple(8 for _ in starts)},
        nvlink=None,
    )
    return build_chart("lab-pool", found)


@pytest.mark.parametrize(
    "now",
    [
        datetime(2026, 12, 4, 12, 30, 5, tzinfo=UTC),  # in noon's hour, after noon (CI met this)
        datetime(2026, 12, 4, 12, 0, tzinfo=UTC),  # noon on the dot
        datetime(2026, 12, 4, 11, 59, 59, tzinfo=UTC),
        datetime(2026, 12, 4, 0, 0, tzinfo=UTC),
        datetime(2026, 12, 4, 23, 15, tzinfo=UTC),
    ],
)
def test_the_chart_labels_fourteen_days_whatever_the_hour(now):
    chart = chart_at(now)
    labels = [label for _, label in chart.days]
    assert len(labels) == 14, labels
    assert len(set(labels)) == 14
    xs = [x for x, _ in chart.days]
    assert xs == sorted(xs)
    assert xs[0] - LABEL_HALF_WIDTH >= 0 and xs[-1] + LABEL_HALF_WIDTH <= chart.width
