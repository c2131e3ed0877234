"""Read CAPACITY settings once: plugins (settings first, then installed apps' extensions), weights, top N."""

from __future__ import annotations

import random as _random
from functools import cache

from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from capacity.placement import PluginConfigError, SchedulerPlugin, join_plugins
from capacity.placers.types import PLACERS, PlacerConfig

DEFAULTS = {"PLACER": "inline", "MAX_BATCH": 64, "BATCH_LINGER_MS": 10, "MAX_ATTEMPTS": 3, "SCHEDULER": {}}
_system_random = _random.SystemRandom()


def capacity_settings() -> dict:
    """Return CAPACITY with defaults filled in."""
    return {**DEFAULTS, **getattr(settings, "CAPACITY", {})}


def _load(entry: object) -> SchedulerPlugin:
    plugin = import_string(entry) if isinstance(entry, str) else entry
    if not isinstance(plugin, SchedulerPlugin):
        raise ImproperlyConfigured(f"{entry!r} is not a scheduler plugin (use define_scheduler_plugin)")
    return plugin


def extension_plugins() -> list[SchedulerPlugin]:
    """Return the plugins installed apps declare as `scheduler_plugins` on their AppConfig."""
    found = []
    for config in apps.get_app_configs():
        found.extend(_load(entry) for entry in getattr(config, "scheduler_plugins", ()))
    return found


@cache
def placer_config() -> PlacerConfig:
    """Return the placer configuration; a duplicate plugin id is an error here, at start-up."""
    conf = capacity_settings()
    if conf["PLACER"] not in PLACERS:
        raise ImproperlyConfigured(
            f"CAPACITY['PLACER'] must be one of {', '.join(PLACERS)}, not {conf['PLACER']!r}"
        )
    if not 1 <= int(conf["MAX_BATCH"]) <= 64:
        raise ImproperlyConfigured("CAPACITY['MAX_BATCH'] must be between 1 and 64")
    if not 0 <= float(conf["BATCH_LINGER_MS"]) <= 1000:
        raise ImproperlyConfigured("CAPACITY['BATCH_LINGER_MS'] must be between 0 and 1000")
    scheduler = conf.get("SCHEDULER", {})
    try:
        plugins = join_plugins([_load(p) for p in scheduler.get("PLUGINS", ())], extension_plugins())
    except PluginConfigError as err:
        raise ImproperlyConfigured(str(err)) from err
    return PlacerConfig(
        plugins=plugins,
        weights=dict(scheduler.get("WEIGHTS", {})) or None,
        top_n=int(scheduler.get("TOP_N", 5)),
        max_attempts=int(conf.get("MAX_ATTEMPTS", 3)),
        random=_system_random.random,
        placer=conf["PLACER"],
        max_batch=int(conf["MAX_BATCH"]),
        linger=float(conf["BATCH_LINGER_MS"]) / 1000,
    )


@receiver(setting_changed)
def _reset(setting, **kwargs):
    if setting == "CAPACITY":
        placer_config.cache_clear()
