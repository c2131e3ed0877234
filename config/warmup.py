"""Warm a new process before it answers: import every view, fill the URL resolver, compile templates.

Without this a web process's first request pays for it (in a 2-core VM: 360-400 ms of CPU for
the pool page, against 15 ms for the second): importing every view and API module through the
URLconf, building the reverse index, compiling the page's templates and the form widgets' ones.
config/wsgi.py calls `warm` once per process, before gunicorn hands it a request. What is data
(the placer's index of each pool, which a pool page's chart needs when it is drawn again) apps
read in jobs they registered (`register`), also before the first request: a worker started
under load answers at once rather than building an index while its first readers wait.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from django.db import connections
from django.forms.renderers import get_default_renderer
from django.template import TemplateDoesNotExist, TemplateSyntaxError, engines
from django.urls import URLResolver, get_resolver
from django.utils import translation

log = logging.getLogger("berth.warmup")
_JOBS: list[Callable[[], object]] = []


def register(job: Callable[[], object]) -> None:
    """Have `job` (an app's data a first request would read) run as a process warms."""
    _JOBS.append(job)


def registered() -> list[Callable[[], object]]:
    """Return the jobs the apps registered."""
    return list(_JOBS)


def _run_jobs() -> None:
    try:
        for job in registered():
            try:
                job()
            except Exception:  # a warm-up that fails leaves the work to the first request that needs it
                log.warning("warm-up job %s failed", getattr(job, "__qualname__", job), exc_info=True)
    finally:
        # gunicorn serves from other threads: this one's connection would stay open, idle, for good.
        for conn in connections.all(initialized_only=True):
            if not conn.in_atomic_block:  # (a test's transaction: left to the test)
                conn.close()


def _names(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.html"))


def _reverse_index(resolver: URLResolver) -> None:
    """Build the reverse index of `resolver` and of every namespace under it, as {% url %} would."""
    resolver.reverse_dict  # noqa: B018
    for _prefix, inner in resolver.namespace_dict.values():
        _reverse_index(inner)


def warm(jobs: bool = True) -> dict[str, float | int]:
    """Load what every first request would load; return how many templates and how long it took.

    `jobs`: run the apps' registered jobs too (their data; tests leave them out).
    """
    t0 = time.perf_counter()
    resolver = get_resolver()
    resolver.url_patterns  # noqa: B018 - imports every view and API module
    with translation.override(settings.LANGUAGE_CODE):  # the index is kept per language
        _reverse_index(resolver)
    compiled = 0
    base = Path(settings.BASE_DIR).resolve()
    for engine in engines.all():
        # Berth's own templates only: the admin's and the API browser's are rarely a first page.
        for root in (Path(d).resolve() for d in getattr(engine, "template_dirs", ())):
            if not root.is_relative_to(base) or ".venv" in root.parts:
                continue
            for name in _names(root):
                try:
                    engine.get_template(name)
                    compiled += 1
                except (
                    TemplateDoesNotExist,
                    TemplateSyntaxError,
                ):  # a partial's fragment or a mistake: shown when asked
                    log.warning("template %s not compiled at warm-up", name, exc_info=True)
    # The form widgets' templates, which every page with a form renders through the form renderer.
    renderer = get_default_renderer()
    widgets = Path(__import__("django.forms").forms.__file__).parent / "templates"
    for name in _names(widgets / "django" / "forms"):
        renderer.get_template(f"django/forms/{name}")
        compiled += 1
    if jobs:
        _run_jobs()
    took = time.perf_counter() - t0
    log.info("warmed in %.0f ms: %d templates", took * 1000, compiled)
    return {"templates": compiled, "seconds": round(took, 3)}
