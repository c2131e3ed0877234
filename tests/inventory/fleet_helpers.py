"""Build fleet directories from the samples in fleet_samples/, one node per directory; run import_fleet."""

import io
import re
import shutil
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

SAMPLES = Path(__file__).parent / "fleet_samples"
_UUID_RE = re.compile(r"(GPU|MIG)-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})")


def node_files(sample: str, name: str) -> dict[str, str]:
    """Return the sample's files with every UUID made unique to node `name`."""

    def fresh(m: re.Match) -> str:
        return f"{m.group(1)}-{uuid.uuid5(uuid.NAMESPACE_DNS, name + m.group(2))}"

    return {p.name: _UUID_RE.sub(fresh, p.read_text()) for p in sorted((SAMPLES / sample).iterdir())}


def write_node(root: Path, name: str, sample: str = "dgx-a100-01", files: dict | None = None) -> Path:
    """Write node `name` (a copy of `sample` with its own UUIDs) under root.

    `files` maps a file name to the text to write instead, or to None to leave the file out.
    """
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    texts: dict = {**node_files(sample, name), **(files or {})}
    for file_name, text in texts.items():
        if text is not None:
            (folder / file_name).write_text(text)
    return folder


def copy_samples(root: Path) -> Path:
    """Copy fleet_samples/ (dgx-h100-01, dgx-a100-01) to root."""
    shutil.copytree(SAMPLES, root, dirs_exist_ok=True)
    return root


def run(*args: str) -> str:
    """Return what manage.py import_fleet printed."""
    out = io.StringIO()
    call_command("import_fleet", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def refused(*args: str) -> tuple[str, CommandError]:
    """Return what manage.py import_fleet printed and the error it failed with."""
    out = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("import_fleet", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue(), caught.value
