"""The bridge's counters on /metrics, shared across processes as capacity's are (metrics/store.py)."""

from config.metrics_dir import metrics_dir

# Before prometheus-client picks per-process or shared values (metrics/events.py does the same).
metrics_dir()

from prometheus_client import Counter, values  # noqa: E402

if not getattr(values.ValueClass, "_multiprocess", False):
    values.ValueClass = values.MultiProcessValue()

PASSES = Counter(
    "berth_slurm_passes",
    "Reconcile passes of the Slurm bridge, by result: ok, problems (it could not do something), unreachable.",
    ["result"],
)
PROBLEMS = Counter(
    "berth_slurm_problems",
    "Things a reconcile pass could not do (counted again at each pass they remain), by kind.",
    ["kind"],
)
