"""Scheduler plugins: admission hooks, filters, scorers and atom pickers."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .errors import PluginConfigError
from .types import Atom, DeviceRequest, NodeView, PlacementRequest

AdmitFn = Callable[[PlacementRequest, Any], object]
FilterFn = Callable[[PlacementRequest, NodeView], object]
ScoreFn = Callable[[PlacementRequest, NodeView], object]
PickFn = Callable[[DeviceRequest, list[Atom], NodeView], Sequence[Atom] | None]

REJECTED_REASON: Final = "rejected"
INVALID_ANSWER_REASON: Final = "filter returned an invalid answer"


@dataclass(frozen=True, slots=True)
class Reject:
    """A filter's answer that turns a node down."""

    reason: str


@dataclass(frozen=True, slots=True)
class PluginFilter:
    """A filter: return True to keep the node, or Reject / {"reason": ...} to turn it down."""

    id: str
    filter: FilterFn


@dataclass(frozen=True, slots=True)
class PluginScorer:
    """A scorer: return a number, clamped to 0..1 (non-finite counts as 0)."""

    id: str
    score: ScoreFn
    weight: float | None = None


@dataclass(frozen=True, slots=True)
class Picker:
    """A preferred-allocation picker for one exact device class."""

    device_class: str
    pick: PickFn


@dataclass(frozen=True, slots=True)
class SchedulerPlugin:
    """A frozen scheduler plugin, as define_scheduler_plugin builds it."""

    id: str
    admit: AdmitFn | None = None
    filters: tuple[PluginFilter, ...] = ()
    scorers: tuple[PluginScorer, ...] = ()
    prefer_allocation: tuple[Picker, ...] = ()


def _field(item: object, names: tuple[str, ...], what: str, plugin_id: str) -> Any:
    if isinstance(item, Mapping):
        for name in names:
            if name in item:
                return item[name]
        raise PluginConfigError(f'scheduler plugin "{plugin_id}": {what} needs "{names[0]}"')
    raise PluginConfigError(f'scheduler plugin "{plugin_id}": a {what} must be a mapping or a {what} object')


def _text(value: object, what: str, plugin_id: str) -> str:
    if not isinstance(value, str) or not value:
        raise PluginConfigError(f'scheduler plugin "{plugin_id}": {what} must be a non-empty string')
    return value


def _callable(value: object, what: str, plugin_id: str) -> Any:
    if not callable(value):
        raise PluginConfigError(f'scheduler plugin "{plugin_id}": {what} must be callable')
    return value


def _as_filter(item: object, plugin_id: str) -> PluginFilter:
    if isinstance(item, PluginFilter):
        return item
    if isinstance(item, tuple) and len(item) == 2:
        item = {"id": item[0], "filter": item[1]}
    fid = _text(_field(item, ("id",), "filter", plugin_id), "a filter id", plugin_id)
    fn = _callable(_field(item, ("filter",), "filter", plugin_id), f'filter "{fid}"', plugin_id)
    return PluginFilter(fid, fn)


def _as_scorer(item: object, plugin_id: str) -> PluginScorer:
    if not isinstance(item, PluginScorer):
        if isinstance(item, tuple) and len(item) in (2, 3):
            item = dict(zip(("id", "score", "weight"), item, strict=False))
        sid = _text(_field(item, ("id",), "scorer", plugin_id), "a scorer id", plugin_id)
        fn = _callable(_field(item, ("score",), "scorer", plugin_id), f'scorer "{sid}"', plugin_id)
        assert isinstance(item, Mapping)
        item = PluginScorer(sid, fn, item.get("weight"))
    weight = item.weight
    if weight is not None and (
        isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight)
    ):
        raise PluginConfigError(f'scheduler plugin "{plugin_id}": scorer "{item.id}" weight must be a number')
    return item


def _as_picker(item: object, plugin_id: str) -> Picker:
    if isinstance(item, Picker):
        return item
    if isinstance(item, tuple) and len(item) == 2:
        item = {"class": item[0], "pick": item[1]}
    cls = _text(_field(item, ("class", "device_class"), "picker", plugin_id), "a picker class", plugin_id)
    fn = _callable(_field(item, ("pick",), "picker", plugin_id), f'picker for "{cls}"', plugin_id)
    return Picker(cls, fn)


def define_scheduler_plugin(
    id: str,
    *,
    admit: AdmitFn | None = None,
    filters: Iterable[PluginFilter | Mapping[str, Any] | tuple[Any, ...]] = (),
    scorers: Iterable[PluginScorer | Mapping[str, Any] | tuple[Any, ...]] = (),
    prefer_allocation: Iterable[Picker | Mapping[str, Any] | tuple[Any, ...]] = (),
) -> SchedulerPlugin:
    """Return a frozen SchedulerPlugin; filters, scorers and pickers may be given as mappings."""
    plugin_id = _text(id, "the id", str(id))
    if admit is not None:
        _callable(admit, "admit", plugin_id)
    plugin = SchedulerPlugin(
        plugin_id,
        admit,
        tuple(_as_filter(f, plugin_id) for f in filters),
        tuple(_as_scorer(s, plugin_id) for s in scorers),
        tuple(_as_picker(p, plugin_id) for p in prefer_allocation),
    )
    _unique((s.id for s in plugin.scorers), "scorer")
    _unique((f.id for f in plugin.filters), "filter")
    return plugin


def _unique(ids: Iterable[str], what: str) -> None:
    seen: set[str] = set()
    for item in ids:
        if item in seen:
            raise PluginConfigError(f'duplicate scheduler {what} id "{item}"')
        seen.add(item)


def check_plugins(plugins: Iterable[SchedulerPlugin]) -> tuple[SchedulerPlugin, ...]:
    """Return plugins as a tuple, raising PluginConfigError on a duplicate plugin or scorer id."""
    joined = tuple(plugins)
    for plugin in joined:
        if not isinstance(plugin, SchedulerPlugin):
            raise PluginConfigError(f"not a scheduler plugin: {plugin!r}")
    _unique((p.id for p in joined), "plugin")
    _unique((s.id for p in joined for s in p.scorers), "scorer")
    return joined


def join_plugins(
    settings_plugins: Iterable[SchedulerPlugin], extension_plugins: Iterable[SchedulerPlugin] = ()
) -> tuple[SchedulerPlugin, ...]:
    """Join the settings' plugins and the extensions' (settings first); reject duplicate ids."""
    return check_plugins((*settings_plugins, *extension_plugins))


def run_admit(plugins: Iterable[SchedulerPlugin], request: PlacementRequest, context: Any) -> None:
    """Call every plugin's admit hook in order; a CapacityError it raises refuses the request."""
    for plugin in plugins:
        if plugin.admit is not None:
            plugin.admit(request, context)


def filter_verdict(answer: object) -> str | None:
    """Return None when a filter's answer keeps the node, else the reason it turns it down."""
    if answer is True:
        return None
    if isinstance(answer, Reject):
        return answer.reason
    if isinstance(answer, Mapping):
        reason = answer.get("reason")
        if isinstance(reason, str):
            return reason
    if answer is False:
        return REJECTED_REASON
    return INVALID_ANSWER_REASON
