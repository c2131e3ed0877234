"""A local Slurm cluster for the bridge's tests: munge, one slurmctld and two slurmd on this machine.

`python -m devtools.slurm_cluster up` (`make slurm`) writes slurm.conf, gres.conf and Berth's
job_submit.lua (slurm/job_submit.lua) into .slurm/ (git-ignored), with eight fake GPUs per node (one `File=` each, symlinks to /dev/null), starts munged
when no daemon answers, then slurmctld and one `slurmd -N <node>` per node in the background (each
node with `NodeHostname=localhost` and a port of its own), and waits until every node is idle. It is
idempotent: a cluster that answers with this configuration is left alone. `down` stops the daemons
it started (by the pids in .slurm/) and removes .slurm/. `status` prints `sinfo`.

Debian's packages (slurmctld, slurmd, slurm-client, munge) are installed with apt-get when missing,
as CI installs Chromium. Everything runs as root here (SlurmUser=root), with no cgroups or systemd
(proctrack/linuxproc, task/none). BERTH_SLURM_PORT moves the ports (slurmctld; the nodes follow).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / ".slurm"
CONF = BASE / "slurm.conf"
NODES = ("berth-n1", "berth-n2")
GPUS = 8
CLUSTER = "berth"
PARTITION = "berth"
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
JOB_SUBMIT = ROOT / "slurm" / "job_submit.lua"


def port() -> int:
    """Return slurmctld's port (BERTH_SLURM_PORT, 16817 by default); node i listens on port + 1 + i."""
    return int(os.environ.get("BERTH_SLURM_PORT", "16817"))


def env() -> dict[str, str]:
    """Return the environment Slurm's commands need to find this cluster."""
    return {**os.environ, "SLURM_CONF": str(CONF)}


def install() -> None:
    """Install Debian's Slurm and munge packages when a command is missing."""
    if all(shutil.which(c) for c in ("slurmctld", "slurmd", "scontrol", "munged")):
        return
    print("== installing Debian's Slurm and munge packages", flush=True)
    quiet = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=quiet)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES], check=True, env=quiet
    )


def conf_text() -> str:
    """Return slurm.conf for the local cluster."""
    base, ctl = BASE, port()
    nodes = "\n".join(
        f"NodeName={name} NodeHostname=localhost Port={ctl + 1 + i} CPUs=2 RealMemory=1000 "
        f"Gres=gpu:{GPUS} State=UNKNOWN"
        for i, name in enumerate(NODES)
    )
    return f"""# Written by devtools/slurm_cluster.py (make slurm): a local cluster for Berth's Slurm bridge tests.
ClusterName={CLUSTER}
SlurmctldHost=localhost
SlurmctldPort={ctl}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool/%n
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd-%n.pid
SlurmctldLogFile={base}/log/slurmctld.log
SlurmdLogFile={base}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
KillWait=2
MinJobAge=30
JobSubmitPlugins=lua
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_interval=1
{nodes}
PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE DefaultTime=5 State=UP
"""


def gres_text() -> str:
    """Return gres.conf: one `File=` per fake GPU (a symlink to /dev/null)."""
    return f"NodeName={','.join(NODES)} Name=gpu File={BASE}/dev/gpu[0-{GPUS - 1}]\n"


def scontrol(*args: str, check: bool = True, timeout: float = 15) -> subprocess.CompletedProcess:
    """Run scontrol against the local cluster."""
    return subprocess.run(
        ["scontrol", *args], capture_output=True, text=True, env=env(), check=check, timeout=timeout
    )


def _munge_answers() -> bool:
    try:
        made = subprocess.run(["munge", "-n"], capture_output=True, check=True, timeout=5)
        subprocess.run(["unmunge"], input=made.stdout, capture_output=True, check=True, timeout=5)
        return True
    except (subprocess.SubprocessError, OSError):
        return False


def _start_munge() -> None:
    if _munge_answers():
        return
    Path("/run/munge").mkdir(exist_ok=True)
    shutil.chown("/run/munge", "munge", "munge")
    if not Path("/etc/munge/munge.key").exists():  # the package's postinst makes one; a bare image may not
        subprocess.run(["runuser", "-u", "munge", "--", "mungekey", "--create"], check=True, timeout=30)
    subprocess.run(["runuser", "-u", "munge", "--", "munged", "--force"], check=True, timeout=15)
    _wait(_munge_answers, 10, "munged does not answer")


def _wait(ready, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.2)
    raise SystemExit(f"make slurm: {what} (logs in {BASE / 'log'})")


def _pid(path: Path) -> int | None:
    try:
        pid = int(path.read_text().split()[0])
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError, IndexError):
        return None


def _idle() -> bool:
    shown = subprocess.run(
        ["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, env=env(), timeout=10
    )
    states = dict(line.split() for line in shown.stdout.splitlines() if line.strip())
    return shown.returncode == 0 and all(states.get(n) in ("idle", "mix", "alloc", "resv") for n in NODES)


def _write_conf() -> bool:
    """Write the files; return whether slurm.conf changed."""
    for folder in ("state", "log", "dev", *(f"spool/{n}" for n in NODES)):
        (BASE / folder).mkdir(parents=True, exist_ok=True)
    for i in range(GPUS):
        gpu = BASE / "dev" / f"gpu{i}"
        if not gpu.is_symlink():
            gpu.symlink_to("/dev/null")
    (BASE / "gres.conf").write_text(gres_text())
    lua = BASE / "job_submit.lua"
    old = (CONF.read_text() if CONF.exists() else "") + (lua.read_text() if lua.exists() else "")
    CONF.write_text(conf_text())
    # Berth's job_submit plugin, as an operator installs it: GPU jobs only in reservations.
    lua.write_text(JOB_SUBMIT.read_text())
    return old != CONF.read_text() + lua.read_text()


def up() -> None:
    """Start what is not running; wait until every node is idle."""
    install()
    changed = _write_conf()
    _start_munge()
    if changed:
        _stop_daemons()
    if _pid(BASE / "slurmctld.pid") is None:
        # -i: ignore a state file written by another configuration; the bridge's reconcile rebuilds what it needs.
        subprocess.run(["slurmctld", "-f", str(CONF), "-i"], check=True, env=env(), timeout=30)
        _wait(lambda: scontrol("ping", check=False).returncode == 0, 20, "slurmctld does not answer")
    for node in NODES:
        if _pid(BASE / f"slurmd-{node}.pid") is None:
            subprocess.run(["slurmd", "-f", str(CONF), "-N", node], check=True, env=env(), timeout=30)
    for node in NODES:  # a node left DOWN by an earlier run comes back
        scontrol("update", f"NodeName={node}", "State=RESUME", check=False)
    _wait(_idle, 60, "the nodes do not come up idle")
    print(
        f"Slurm cluster '{CLUSTER}' up: nodes {', '.join(NODES)} with {GPUS} fake GPUs each; SLURM_CONF={CONF}"
    )


def _stop_daemons() -> None:
    pids = [p for f in (BASE.glob("slurmd-*.pid") if BASE.exists() else []) if (p := _pid(f))]
    if (ctl := _pid(BASE / "slurmctld.pid")) is not None:
        pids.append(ctl)
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)


def down() -> None:
    """Stop the daemons this cluster started and remove .slurm/ (munged is left running)."""
    _stop_daemons()
    shutil.rmtree(BASE, ignore_errors=True)
    print("Slurm cluster stopped and .slurm/ removed")


def main(argv: list[str]) -> None:
    command = argv[0] if argv else "up"
    if command == "up":
        up()
    elif command == "down":
        down()
    elif command == "status":
        subprocess.run(["sinfo", "-N", "-l"], env=env(), check=False)
    else:
        raise SystemExit("usage: python -m devtools.slurm_cluster up|down|status")


if __name__ == "__main__":
    main(sys.argv[1:])
