"""The house's arrows point one way: no import circles, no layer importing one above it.

capacity.placement ← capacity.db ← capacity.placers ← capacity.services ← views / api / commands /
port / worker; capacity imports inventory, inventory never imports capacity; usage, whatif and
webhooks build on capacity and inventory, and neither of them imports those. Read from the source
(no imports run), so a lazy import inside a function counts as much as one at the top, and each
lazy import of a first-party module must be listed below with the reason it cannot be at the top.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from devtools import reach

ROOT = Path(__file__).resolve().parent.parent
# Every app, a new one too: devtools.reach finds each top-level package.
PACKAGES = reach.APPS

# (importer, imported): why the import must wait until the function runs.
LAZY_ALLOWED = {
    ("capacity.apps", "capacity.receivers"): "AppConfig.ready: receivers import models, not loaded yet",
    ("capacity.apps", "capacity.services.insert"): "post_migrate handler: services import models",
    ("capacity.apps", "capacity.placers.commit"): "post_migrate handler: the commit imports models",
    ("capacity.apps", "capacity.access"): "AppConfig.ready: answers config.access; access imports models",
    ("capacity.apps", "capacity.placers.index"): "AppConfig.ready: registers the pool indexes' warm-up",
    ("capacity.apps", "capacity.services.release"): "AppConfig.ready: does config.actions' release (models)",
    ("identity.apps", "identity.receivers"): "AppConfig.ready: receivers import models, not loaded yet",
    ("identity.apps", "identity.tokens"): "AppConfig.ready: answers config.access's token_refusal (models)",
    ("auditlog.apps", "capacity.worker_jobs"): "AppConfig.ready: registers the sign-in retention job",
    ("auditlog.apps", "auditlog.retention"): "AppConfig.ready: retention imports models, not loaded yet",
    ("config.gunicorn.conf", "config.checks"): "gunicorn's on_starting: Django is set up inside the hook",
    ("devtools.bench.cold_page", "config.wsgi"): "a new process: Django is set up first, then the app loads",
    ("config.settings", "config.embedded_db"): "starts the embedded Postgres only when DATABASE_URL is unset",
    **{
        (f"{app}.apps", "capacity.port"): "AppConfig.ready: the port's names load capacity's models"
        for app in ("usage", "webhooks", "whatif", "auditlog", "policy", "metrics", "slurm", "maintenance")
    },
    ("policy.apps", "capacity.rules"): "AppConfig.ready: registers the pool rules in capacity's registry",
    ("series.apps", "series.hooks"): "AppConfig.ready: answers capacity.series_hooks (models)",
    ("policy.apps", "capacity.views.pool_sections"): "AppConfig.ready: registers the pool page's sections",
    ("policy.apps", "policy.quota_cards"): "AppConfig.ready: the quota cards read capacity's models",
    ("policy.apps", "capacity.worker_jobs"): (
        "AppConfig.ready: registers the approval expiry job and the round's notice-expiry and reclaim steps"
    ),
    ("policy.apps", "policy.approvals"): "AppConfig.ready: the expiry job imports models, not loaded yet",
    ("policy.apps", "policy.fair_queue"): "AppConfig.ready: registers the fair queue; it imports models",
    ("policy.apps", "capacity.api.views"): "AppConfig.ready: adds a reservation's PATCH",
    ("policy.apps", "policy.api.keep_when_idle"): (
        "AppConfig.ready: adds a reservation's PATCH to capacity's endpoint; its view imports models"
    ),
    **{
        (
            "policy.apps",
            f"policy.{rule}",
        ): "AppConfig.ready: registers the rule; rules import capacity's models"
        for rule in (
            "approval",
            "borrowing",
            "keep_when_idle",
            "lending",
            "limits",
            "notice",
            "outside_check",
            "reclaim",
            "reclaim_processes",
        )
    },
    **{
        (
            "policy.apps",
            f"policy.{section}",
        ): "AppConfig.ready: registers the pool page's section; its form reads inventory's models"
        for section in ("policy_section", "shares_section")
    },
    ("metrics.apps", "capacity.observe"): "AppConfig.ready: registers the counters as capacity's observers",
    ("usage.apps", "capacity.services.usage_hooks"): "AppConfig.ready: answers capacity's usage questions",
    ("usage.apps", "capacity.worker_jobs"): "AppConfig.ready: registers the fold and idle-check job",
    ("usage.apps", "capacity.checks"): "AppConfig.ready: registers check_capacity's booked-hours recount",
    ("usage.apps", "usage.booked_hours"): "AppConfig.ready: the booked-hours recount imports models",
    ("usage.apps", "usage.figures"): "AppConfig.ready: figures read models, not loaded yet",
    ("usage.apps", "usage.jobs"): "AppConfig.ready: the job imports models, not loaded yet",
    ("usage.apps", "usage.receivers"): "AppConfig.ready: receivers import models, not loaded yet",
    ("usage.apps", "usage.unbooked"): "AppConfig.ready: unbooked use imports models, not loaded yet",
    ("webhooks.apps", "capacity.worker_jobs"): "AppConfig.ready: registers the delivery job",
    ("webhooks.apps", "webhooks.deliver"): "AppConfig.ready: deliver imports models, not loaded yet",
    ("whatif.apps", "capacity.worker_jobs"): "AppConfig.ready: registers the what-if job",
    ("slurm.apps", "capacity.worker_jobs"): "AppConfig.ready: registers the bridge's reconcile job",
    ("slurm.apps", "capacity.rules"): "AppConfig.ready: registers the account rule in capacity's registry",
    ("slurm.apps", "slurm.accounts"): "AppConfig.ready: the account rule imports models, not loaded yet",
    ("slurm.apps", "capacity.models.rules"): "a signal handler: the pool's rule follows its bridge (models)",
    ("slurm.apps", "slurm.jobs"): "AppConfig.ready: the job imports models, not loaded yet",
    ("slurm.apps", "slurm.models"): "AppConfig.ready: the bridge's models, not loaded yet",
    ("slurm.apps", "slurm.section"): "AppConfig.ready: registers the pool page's Slurm section (models)",
    ("slurm.apps", "slurm.services"): "AppConfig.ready: registers check_capacity's check (models)",
    ("slurm.apps", "capacity.checks"): "AppConfig.ready: registers check_capacity's check",
    ("slurm.apps", "capacity.views.pool_sections"): "AppConfig.ready: registers the pool page's section",
    ("whatif.apps", "whatif.runs"): "AppConfig.ready: runs imports models, not loaded yet",
    (
        "maintenance.apps",
        "capacity.worker_jobs",
    ): "AppConfig.ready: registers the windows' start and end step",
    ("maintenance.apps", "capacity.services.repair"): "AppConfig.ready: registers the repair's notice hook",
    (
        "maintenance.apps",
        "capacity.views.pool_sections",
    ): "AppConfig.ready: registers the pages' windows panel",
    (
        "maintenance.apps",
        "maintenance.notice",
    ): "AppConfig.ready: the repair's hook imports models, not loaded yet",
    (
        "maintenance.apps",
        "maintenance.pages",
    ): "AppConfig.ready: the panel's views import models, not loaded yet",
    (
        "maintenance.apps",
        "maintenance.windows",
    ): "AppConfig.ready: the worker's step imports models, not loaded yet",
}

# (importer prefix, imported prefix) pairs that must never appear.
FORBIDDEN = [
    ("capacity.placement", "capacity.db"),
    ("capacity.placement", "capacity.placers"),
    ("capacity.placement", "capacity.services"),
    ("capacity.placement", "inventory"),
    ("capacity.db", "capacity.placers"),
    ("capacity.db", "capacity.services"),
    ("capacity.placers", "capacity.services"),
    ("capacity.placers", "capacity.views"),
    ("capacity.placers", "capacity.api"),
    ("capacity.placers", "capacity.conf"),
    ("capacity.services", "capacity.views"),
    ("capacity.services", "capacity.api"),
    ("capacity.services", "capacity.management"),
    ("capacity", "devtools"),
    ("inventory", "capacity"),
    ("inventory", "devtools"),
    # Webhooks sit on top: capacity runs them through worker_jobs without knowing them.
    ("capacity", "webhooks"),
    ("inventory", "webhooks"),
    # Usage sits on top too: capacity asks it through services.usage_hooks, inventory through signals.
    ("capacity", "usage"),
    ("inventory", "usage"),
    ("usage", "devtools"),
    ("webhooks", "devtools"),
    # The pool rules sit on top: capacity calls them through capacity.rules without knowing them.
    ("capacity", "policy"),
    ("inventory", "policy"),
    ("policy", "devtools"),
    # Series sit on top: capacity hands a create with `repeat` over through series_hooks.
    ("capacity", "series"),
    ("inventory", "series"),
    ("series", "devtools"),
    # What if sits on top too: capacity runs its job through worker_jobs without knowing it.
    ("capacity", "whatif"),
    ("inventory", "whatif"),
    ("whatif", "devtools"),
    # The metrics sit on top: capacity tells its observers (capacity.observe) without knowing them.
    ("capacity", "metrics"),
    ("inventory", "metrics"),
    ("metrics", "devtools"),
    # The maintenance windows sit on top: capacity runs their step, hook and panel without knowing them.
    ("capacity", "maintenance"),
    ("inventory", "maintenance"),
    ("maintenance", "devtools"),
    # The node agent's side of the API sits on top: capacity serves no agent, the feed reads it.
    ("capacity", "agents"),
    ("inventory", "agents"),
    ("agents", "devtools"),
    # config is a leaf: apps register into it (config.access, register_error, count_reads_with).
    ("config", "capacity"),
    ("config", "inventory"),
    ("config", "webhooks"),
    ("config", "devtools"),
    # Identity (SSO, API tokens) sits beside capacity: it sets inventory's tenant memberships and
    # keeps who holds which key, and books nothing.
    ("config", "identity"),
    ("inventory", "identity"),
    ("capacity", "identity"),
    ("identity", "capacity"),
    ("identity", "devtools"),
    # The audit export sits on top: it reads every app's records, and nothing imports it.
    *[
        (app, "auditlog")
        for app in ("capacity", "inventory", "config", "identity", "usage", "webhooks", "whatif")
    ],
    ("auditlog", "devtools"),
    # The audit trail is beneath every app that writes a change (who acts, the request id, the one
    # table): it imports none of them.
    *[
        ("trail", app)
        for app in ("capacity", "inventory", "config", "identity", "usage", "webhooks", "whatif", "auditlog")
    ],
    ("trail", "devtools"),
]

# What each app may import besides itself (standard library and third parties aside).
MAY_IMPORT = {
    "whatif": ("capacity", "inventory", "config", "policy"),
    "series": ("capacity", "inventory", "config"),
    "maintenance": ("capacity", "inventory", "config", "trail"),
    "agents": ("capacity", "inventory", "config"),
}


MODULES = reach.find_modules(ROOT, PACKAGES)


def _imports() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Return (module-level edges, lazy edges) between first-party modules.

    A name asked of a face (config.face) is an edge to the module that defines it, as devtools.reach
    reads it; imports only for type checkers never run and are left out.
    """
    top: dict[str, set[str]] = defaultdict(set)
    lazy: dict[str, set[str]] = defaultdict(set)
    trees = {module: ast.parse(path.read_text()) for module, path in MODULES.items()}
    faces = reach.find_faces(trees, MODULES)
    for module, path in MODULES.items():
        tree = trees[module]
        at_top = {id(n) for n in tree.body} | {
            id(n) for s in tree.body if isinstance(s, ast.If | ast.Try) for n in ast.walk(s)
        }
        for node, _in_function, target in reach.imports_in(tree, module, path, MODULES, faces):
            if isinstance(node, ast.Import | ast.ImportFrom):
                (top if id(node) in at_top else lazy)[module].add(target)
    return top, lazy


TOP, LAZY = _imports()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(MODULES):
        if v not in index:
            visit(v)
    return found


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def test_the_reader_finds_the_layers_it_checks() -> None:
    """The contract reads real modules: the layers and a known arrow are there."""
    assert {"capacity.placement", "capacity.placers.inline", "capacity.services.reserve"} <= set(MODULES)
    assert "capacity.placers.inline" in TOP["capacity.services.placing"]


def test_no_module_imports_back_up_into_a_circle() -> None:
    """No import circle, counting imports inside functions too."""
    graph = {m: TOP[m] | LAZY[m] for m in MODULES}
    assert _cycles(graph) == []


def test_no_layer_imports_one_above_it() -> None:
    """Placers never import services; services and placers never import views or the API; inventory never capacity."""
    broken = sorted(
        f"{importer} -> {imported}"
        for importer in MODULES
        for imported in TOP[importer] | LAZY[importer]
        for low, high in FORBIDDEN
        if _under(importer, low) and _under(imported, high)
    )
    assert broken == []


def test_whatif_imports_only_capacity_inventory_and_config() -> None:
    """What if, series and agents build on capacity and inventory (and the project's config), on nothing
    else first-party (what if replays policy's pure shares' verdict too); maintenance on those and the
    audit trail."""
    broken = sorted(
        f"{importer} -> {imported}"
        for app, allowed in MAY_IMPORT.items()
        for importer in MODULES
        if _under(importer, app)
        for imported in TOP[importer] | LAZY[importer]
        if not any(_under(imported, ok) for ok in (app, *allowed))
    )
    assert broken == []


# The policy modules the simulator may reach: the shares' verdict it replays, pure (no Django, no
# import of policy's rules or models), and the package above it.
WHATIF_READS_OF_POLICY = {"policy", "policy.share_verdict"}


def test_whatif_reaches_only_policys_pure_verdict() -> None:
    """The simulator replays the borrowing rule's verdict and nothing else of policy: no rule, no model."""
    seen = reach.reached(REACH, [m for m in REACH.modules if _under(m, "whatif")])
    assert {m for m in seen if reach.app_of(m) == "policy"} == WHATIF_READS_OF_POLICY


def test_every_lazy_import_has_its_reason() -> None:
    """An import inside a function is allowed only where start-up forces it, and says why."""
    lazy = {(importer, imported) for importer, targets in LAZY.items() for imported in targets}
    assert sorted(lazy - set(LAZY_ALLOWED)) == []


# Reach: what each app can reach through any chain of imports (lazy ones included), not only what it
# imports itself. config/api/auth.py importing capacity.access made inventory.api.fleet reach 72
# capacity modules while every direct import above stayed within the rules.
REACH = reach.read_graph()
APPS = reach.APPS

# (app, app it must never reach): why.
# The apps beside or above capacity: (the most capacity modules the app may reach through any chain of
# imports, the other such apps it may reach). An app that builds on capacity is one row here; each
# reads capacity through capacity.port alone, and nothing beneath reaches it.
SIBLINGS: dict[str, tuple[int, tuple[str, ...]]] = {
    # What webhooks send and the calendar lists: bookings and nodes as capacity.render words them (the
    # models, who may see what, the placement core's words); a place in the fair queue is the API's alone.
    "webhooks": (32, ()),
    # The Slurm bridge: the models it reads, the rule, job and pool-page registries it plugs into,
    # and the maintenance windows a hand-made Slurm reservation becomes (the maintenance app's:
    # scheduling one may move bookings off its nodes, placement).
    "slurm": (63, ("maintenance",)),
    # Taking nodes out of service: the models, the repair that moves bookings off a window's or a
    # drain's nodes (placement), the pool and node pages its panel and drain are drawn on and its forms
    # answer with, and the node actions' API base and the node as the API shows it (cordon, drain).
    "maintenance": (80, ()),
    # The simulator replays the real planner: the pure core (19 modules with the searches it runs),
    # the planner and its reading of the pool (10 with the database helpers; never a window's
    # bookings, which it keeps itself) and the models (9); and the
    # shares' verdict the borrowing rule judges with, policy's pure module (WHATIF_READS_OF_POLICY).
    "whatif": (43, ("policy",)),
    # The models, who may see what, pools' policies, the report's SQL and the commands' base. The idle
    # check releases bookings through config.actions (capacity registers its release), so usage never
    # reaches the pool's pending work a release retries (placement).
    "usage": (35, ()),
    "identity": (0, ()),
    "auditlog": (12, ("identity",)),  # the sign-in records it exports are identity's
    # The pool rules: what a rule reads (the models, the quota lock, the waits' slots) and the
    # registry they plug into (docs/architecture.md, Pool rules); the approval queue and API decide
    # held bookings (a denial releases, which retries the pool's pending work: placement), the API sets
    # policies and shares, and the pool page's Shares and Policy sections read what tenants hold and lend.
    # The rules that place (lending) and judge under the pool's lock (shares) read placement's own
    # attempt loop, commit and reads through the port too; a release's retry may repair; the team
    # pages set quotas (policy.quotas). A reservation's PATCH (keepWhenIdle) is added to capacity's
    # endpoint (capacity.api.views.register_reservation_methods), and the page's Keep when idle button
    # answers a refusal with capacity's reservation page (capacity.views.reservations: 15 modules of
    # its own).
    "policy": (97, ()),
    # The metrics: the observer registry and, for the gauges read at scrape time, pools' capacity now
    # (capacity.rollups), the pending reasons' words (the placement core's) and the models; the
    # scrape's permission (capacity.access).
    "metrics": (35, ()),
    # Series book each occurrence with a create's own steps (prepare, the outside check, the charged insert,
    # the inline placement) and release with release's retry pass; the API's input schema, the CLI's base.
    "series": (79, ()),
    # The node agent's feed and report: the models it reads bookings from, who a node credential is
    # (capacity.access), the errors and a pool's idle policy, the long-polls' slots and node watch, and
    # the REPORTED rules a report runs (capacity.rules); the node actions' API base and the node as the
    # API shows it, which accepting a report's new devices answers with.
    "agents": (38, ()),
}

REACH_FORBIDDEN = {
    ("inventory", "capacity"): "capacity books what inventory knows; inventory stands without it",
    **{
        ("inventory", app): "inventory stands beneath every app that builds on it"
        for app in ("whatif", "usage", "webhooks")
    },
    **{
        ("trail", app): "the audit trail sits beneath every app that records a change through it"
        for app in ("capacity", "inventory", "webhooks", "whatif", "usage")
    },
    ("capacity", "whatif"): "what-if plugs into the worker through worker_jobs; booking never needs it",
    ("capacity", "usage"): "usage reads bookings; booking never needs usage",
    ("capacity", "webhooks"): "webhooks plug into the worker through worker_jobs; booking never needs them",
    ("webhooks", "capacity.api"): "webhooks render through capacity.render, never another app's HTTP modules",
    **{
        (app, "devtools"): "demo data and benchmarks sit apart from the apps; no app needs them"
        for app in APPS
        if app != "devtools"
    },
    **{
        ("agent", app): "the node agent is one standard-library file that runs on GPU nodes"
        for app in APPS
        if app not in ("agent", "devtools")
    },
    **{
        ("config", app): "config is a leaf: settings, root URLconf and an API base apps register into"
        for app in APPS
        if app != "config"
    },
    **{
        (low, app): "the app builds on capacity; what it builds on never needs it"
        for app in SIBLINGS
        for low in ("capacity", "inventory", "trail")
    },
    **{
        (app, other): "apps beside capacity plug into it, not into each other"
        for app, (_, may) in SIBLINGS.items()
        for other in SIBLINGS
        if other != app and other not in may
    },
    ("identity", "capacity"): "sign-in sets inventory's tenant memberships; it never books",
}


def test_the_reach_reader_sees_the_chain_the_direct_check_missed() -> None:
    """The reach graph has the apps, and the arrows of a known chain are in it."""
    assert {"capacity", "inventory", "config", "webhooks", "devtools"} <= {
        reach.app_of(m) for m in REACH.modules
    }
    assert "capacity.placers.inline" in reach.reached(REACH, ["capacity.services.placing"])


@pytest.mark.parametrize("pair", REACH_FORBIDDEN, ids=[f"{a}->{b}" for a, b in REACH_FORBIDDEN])
def test_no_app_reaches_one_it_must_not(pair: tuple[str, str]) -> None:
    """No chain of imports, lazy ones included, leads from an app to one it must never reach."""
    importer, imported = pair
    steps = reach.chain(REACH, importer, imported)
    assert steps is None, (
        f"{importer} reaches {imported} ({REACH_FORBIDDEN[pair]}):\n{reach.format_chain(steps)}"
    )


def test_every_app_is_in_the_reach_graph() -> None:
    """The contract covers each app: every top-level package, and every sibling named above, has modules."""
    apps = {reach.app_of(m) for m in REACH.modules}
    assert set(SIBLINGS) <= apps
    assert {p.parent.name for p in ROOT.glob("*/__init__.py")} <= apps


def _capacity_imports(module: str) -> list[str]:
    """Return each first-party capacity module the module's import statements name, as written."""
    named = []
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] if node.module != "capacity" else [f"capacity.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        named += [name for name in names if _under(name, "capacity")]
    return named


@pytest.mark.parametrize("app", SIBLINGS)
def test_an_app_beside_capacity_imports_it_through_the_port_alone(app: str) -> None:
    """usage, whatif, webhooks, identity, auditlog, policy, metrics, slurm, maintenance and agents name no
    capacity module but capacity.port."""
    broken = sorted(
        f"{module} imports {name}"
        for module in MODULES
        if _under(module, app)
        for name in _capacity_imports(module)
        if name != "capacity.port"
    )
    assert broken == []


@pytest.mark.parametrize("app", SIBLINGS)
def test_an_app_beside_capacity_reaches_no_more_of_it_than_its_limit(app: str) -> None:
    """Through any chain of imports, the app reaches at most its limit of capacity's modules."""
    limit = SIBLINGS[app][0]
    seen = reach.reached(REACH, [m for m in REACH.modules if _under(m, app)])
    found = sorted(m for m in seen if reach.app_of(m) == "capacity")
    widest = reach.widest(REACH, app, "capacity")
    assert len(found) <= limit, (
        f"{app} reaches {len(found)} capacity modules (limit {limit}); widest {widest}"
    )


def test_the_faces_load_nothing_until_a_name_is_asked() -> None:
    """capacity.services, capacity.views and capacity.port import no module of theirs at the top."""
    for face in ("capacity.services", "capacity.views", "capacity.port"):
        assert TOP[face] <= {"config.face"}, face
        assert reach.find_faces({face: ast.parse(MODULES[face].read_text())}, MODULES)[face]


ARCHITECTURE = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- reach: python -m devtools.reach --markdown -->", "<!-- /reach -->"


def test_the_architecture_page_shows_the_reach_the_code_has_now() -> None:
    """docs/architecture.md's arrows and reach table are what `python -m devtools.reach --markdown` prints."""
    page = ARCHITECTURE.read_text()
    shown = page.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert shown == reach.markdown(REACH).strip(), (
        "regenerate the table: python -m devtools.reach --markdown (between the reach markers)"
    )


def test_every_path_the_architecture_page_names_is_there() -> None:
    """Each file or folder the page names in backticks (`capacity/render.py`, `usage/`) exists."""
    paths = {
        text.split(" ")[0].rstrip(":,")
        for text in re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", ARCHITECTURE.read_text(), flags=re.S))
        if re.fullmatch(r"[a-z_]+/[\w/<>.*]*(\.py|/)( .*)?", text) and "<" not in text and "*" not in text
    }
    assert len(paths) > 20
    assert sorted(p for p in paths if not (ROOT / p).exists()) == []
