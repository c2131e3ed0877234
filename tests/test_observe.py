"""capacity.observe: capacity tells named events; the metrics app observes every one of them."""

import pytest

from capacity import observe
from metrics.events import OBSERVERS


def test_the_metrics_app_observes_every_event_capacity_tells():
    assert sorted(OBSERVERS) == sorted(observe.EVENTS)
    assert all(count in observe._observers[event] for event, count in OBSERVERS.items())


def test_an_observer_hears_the_event_with_its_arguments_once_however_often_registered(monkeypatch):
    monkeypatch.setitem(observe._observers, "repair", ())
    heard = []

    def count(kind, *, moved, no_room):
        heard.append((kind, moved, no_room))

    observe.register_observer("repair", count)
    observe.register_observer("repair", count)
    observe.tell("repair", "drain", moved=2, no_room=1)
    assert heard == [("drain", 2, 1)]


def test_an_event_capacity_never_tells_is_refused_by_name():
    with pytest.raises(ValueError, match="no event 'placed': capacity tells placement, "):
        observe.register_observer("placed", print)
    with pytest.raises(KeyError):
        observe.tell("placed")
