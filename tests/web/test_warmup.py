"""A web process warmed before its first request: every view imported, URLs indexed, templates compiled."""

from pathlib import Path

import pytest
from django.conf import settings
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.template import engines
from django.urls import get_resolver
from django.utils import translation

from capacity.placers import index
from capacity.placers.index import warm_indexes
from config.warmup import registered, warm
from devtools.bench.cold_page import _ask


def _kept(engine) -> set[str]:
    """Return the template names the engine's cached loader holds."""
    loader = engine.engine.template_loaders[0]
    return {key.split("-")[0] for key in loader.get_template_cache}


def test_warming_compiles_every_berth_template_and_indexes_every_namespace():
    django_engine = engines["django"]
    for loader in django_engine.engine.template_loaders:
        loader.reset()
    own = sorted(
        p.relative_to(settings.BASE_DIR / "templates").as_posix()
        for p in Path(settings.BASE_DIR / "templates").rglob("*.html")
    )
    assert own, "Berth has templates of its own"

    figures = warm(jobs=False)

    assert figures["templates"] >= len(own)
    assert set(own) <= _kept(django_engine)
    resolver = get_resolver()
    with translation.override(settings.LANGUAGE_CODE):
        assert settings.LANGUAGE_CODE in resolver._reverse_dict
        for _prefix, inner in resolver.namespace_dict.values():
            assert settings.LANGUAGE_CODE in inner._reverse_dict


@pytest.mark.django_db
def test_a_warmed_process_answers_its_first_pool_page_through_the_wsgi_application(two_hosts, op):
    cookie = "; ".join(f"{k}={v.value}" for k, v in op.cookies.items())
    # As Django's test client does: the real handler would close the test's connection at the end.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        first = _ask("/pools/lab-pool/", cookie)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)

    assert first["status"] == 200
    assert first["statements"] >= 1 and first["wallMs"] > 0


@pytest.mark.django_db
def test_a_new_process_builds_the_pools_indexes_in_the_job_capacity_registered(two_hosts):
    assert warm_indexes in registered()
    index._CACHE.clear()  # this process's own: another test's pools
    assert warm_indexes() == 1
    (kept,) = index._CACHE.values()
    assert sorted(kept.by_name) == ["node-a", "node-b"]
