"""Run the reference agent (agent/berth_agent.py) as a program: its node, token, fake nvidia-smi, output.

Each node is an empty node in lab-pool whose agent reports one of the fixture boxes through a fake
`nvidia-smi` that prints the box's files (tests/agent/fixtures/BOX/):

    h100-8     8 × H100 SXM, NV18 between every pair, MIG off
    a100-mig   8 × A100-SXM4-80GB, GPU 0 split 3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb, GPU 1 into 7 × 1g.10gb
    l40s-4     4 × L40S on PCIe, no NVLink
"""

from __future__ import annotations

import glob
import json
import os
import re
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

AGENT = Path(__file__).parents[2] / "agent" / "berth_agent.py"
FIXTURES = Path(__file__).parent / "fixtures"

FAKE_SMI = """#!/bin/sh
# nvidia-smi as the agent calls it, printing a fixture box's files.
case "$*" in
  "-q -x") exec cat "{box}/nvidia-smi-q.xml" ;;
  "-L") exec cat "{box}/nvidia-smi-L.txt" ;;
  "topo -m") exec cat "{box}/topo-m.txt" ;;
  *) echo "fake nvidia-smi: unknown arguments $*" >&2; exit 2 ;;
esac
"""


def oldest_python() -> str:
    """Return the oldest python3.N on this machine: the agent must run under a node's own python3."""
    found = []
    for path in glob.glob("/usr/bin/python3.*") + glob.glob("/usr/local/bin/python3.*"):
        m = re.fullmatch(r".*/python3\.(\d+)", path)
        if m and os.access(path, os.X_OK):
            found.append((int(m.group(1)), path))
    return min(found)[1] if found else "python3"


PYTHON = oldest_python()


@dataclass
class NodeAgent:
    """One node, its token file, its fake nvidia-smi and its output directory."""

    name: str
    url: str
    token_file: Path
    smi: Path
    output: Path

    def args(self, *extra: str) -> list[str]:
        return [
            PYTHON,
            str(AGENT),
            "--url",
            self.url,
            "--node",
            self.name,
            "--token-file",
            str(self.token_file),
            "--nvidia-smi",
            str(self.smi),
            "--output",
            str(self.output),
            *extra,
        ]

    def once(self, *extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.args("--once", "--verbose", *extra), capture_output=True, text=True, timeout=60
        )

    def start(self, *extra: str) -> subprocess.Popen:
        """Start the agent, logging to `log` (a file: a pipe nobody reads would stall it)."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "w") as log:
            return subprocess.Popen(self.args(*extra), stderr=log)

    @property
    def log(self) -> Path:
        return self.output.parent / "agent.log"

    def stop(self, running: subprocess.Popen) -> str:
        """Stop a started agent as systemd would (SIGTERM); return its log."""
        running.terminate()
        running.wait(timeout=15)
        return self.log.read_text()

    def env_files(self) -> dict[str, str]:
        folder = self.output / "reservations"
        if not folder.is_dir():
            return {}
        return {p.stem: p.read_text() for p in sorted(folder.iterdir()) if p.suffix == ".env"}

    def idle_files(self) -> dict[str, dict]:
        """Return reservation id -> what its reservations/ID.idle says (JSON)."""
        folder = self.output / "reservations"
        if not folder.is_dir():
            return {}
        return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.idle"))}


def fake_smi(folder: Path, box: Path) -> Path:
    smi = folder / "nvidia-smi"
    smi.write_text(FAKE_SMI.format(box=box))
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    return smi
