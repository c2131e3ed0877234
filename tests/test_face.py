"""A face loads a name's module on first use and keeps answering the name, not the submodule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from config.face import lazy_face

ROOT = Path(__file__).resolve().parent.parent


def _loaded_after(statement: str) -> set[str]:
    """Return the capacity modules a fresh interpreter has loaded after Django's setup and `statement`."""
    script = (
        "import json, sys, django, os\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')\n"
        "django.setup()\n"
        "before = set(sys.modules)\n"
        f"{statement}\n"
        "print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith('capacity'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(__import__("json").loads(out.stdout.splitlines()[-1]))


def test_asking_the_services_face_for_a_name_loads_that_use_case_not_every_one() -> None:
    loaded = _loaded_after("from capacity.services import preview")
    assert "capacity.services.preview" in loaded
    assert not {"capacity.services.reserve", "capacity.series_hooks", "capacity.views.booking"} & loaded


def test_a_face_name_that_is_also_a_submodule_answers_the_name() -> None:
    from capacity import services, views

    __import__("capacity.services.release")  # loads the submodule `release` as the package's attribute
    from capacity.services.release import release

    assert services.release is release
    assert callable(views.reservations) and not isinstance(views.reservations, type(services))


def test_every_name_of_the_port_and_the_faces_is_there() -> None:
    from capacity import port, services, views

    for face in (port, services, views):
        missing = [
            name for names in face.FACE.values() for name in names if getattr(face, name, None) is None
        ]
        assert missing == [], face.__name__


def test_a_face_refuses_a_bare_string_for_its_names() -> None:
    with pytest.raises(TypeError):
        lazy_face(__name__, {"capacity.access": "EVERYONE"})
