"""Read which modules each app can reach through any chain of imports, from the source alone.

Nothing is imported: every module is parsed with `ast`. An import inside a function counts as much as
one at the top (it runs the first time the function does), and so does `importlib.import_module` or
`__import__` with a literal name. Importing a package runs its `__init__`, so reaching `a.b.c` reaches
`a.b` and `a` too. Imports under `if TYPE_CHECKING:` never run and are left out; dotted strings in
Django settings (INSTALLED_APPS, ROOT_URLCONF) are not imports either.

A face (config.face: a module with a literal `FACE = {"module": ("name", ...)}` table) loads a name's
module only when the name is asked, so `from face import name` reaches the name's module, and
`from pkg import face` (or `import pkg.face as f`) reaches the modules of the names used as `face.name`
in the importer (all of the face's, if the importer hands the face itself around).

`python -m devtools.reach` prints the reach counts: for each app, how many modules of each other app
it reaches. `--chain A B` prints the shortest chain from app (or module) A to app (or module) B.
`--markdown` prints the apps' arrows and the reach table as docs/architecture.md shows them.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The apps in the order the table shows them; any other top-level package (a new app) follows, found
# by itself, so the reach table and the contract test cover it from its first commit.
KNOWN_APPS = (
    "capacity",
    "inventory",
    "config",
    "webhooks",
    "whatif",
    "usage",
    "identity",
    "auditlog",
    "trail",
    "devtools",
    "agent",
)


def find_apps(root: Path = ROOT) -> tuple[str, ...]:
    """Return the known apps, then every other top-level package under `root` (sorted)."""
    found = sorted(p.parent.name for p in root.glob("*/__init__.py") if p.parent.name not in KNOWN_APPS)
    return (*KNOWN_APPS, *found)


APPS = find_apps()


@dataclass(frozen=True)
class Edge:
    """One arrow: the importer reaches `target`, at `line` of the importer, in the way `how` says."""

    target: str
    line: int
    how: str  # "import", "lazy" (inside a function), "import_module", or "package" (parent's __init__)


@dataclass
class Graph:
    """The modules of the given packages and the arrows between them."""

    modules: dict[str, Path]
    edges: dict[str, dict[str, Edge]] = field(default_factory=dict)

    def arrows(self, module: str) -> Iterable[Edge]:
        return self.edges.get(module, {}).values()


def app_of(module: str) -> str:
    return module.partition(".")[0]


def under(module: str, prefix: str) -> bool:
    """Say whether `module` is `prefix` or inside it."""
    return module == prefix or module.startswith(prefix + ".")


def find_modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Map each module name to its file; migrations run only under migrate, so they are left out."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if "migrations" in parts:
                continue
            found[".".join(parts).removesuffix(".__init__")] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST, in_function: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Yield every node with whether it sits inside a function, skipping `if TYPE_CHECKING:` bodies."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for branch in child.orelse:
                yield branch, in_function
                yield from _walk(branch, in_function)
            continue
        yield child, in_function
        inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        yield from _walk(child, inside)


def _absolute(name: str, level: int, package: str) -> str:
    """Resolve a relative import (`level` dots) seen in `package` to an absolute name."""
    if not level:
        return name
    parts = package.split(".")
    base = parts[: len(parts) - level + 1]
    return ".".join([*base, *([name] if name else [])])


def _literal(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _imported_names(node: ast.AST, package: str, modules: dict[str, Path]) -> list[str]:
    """Return the module names one import statement or call asks for (first-party or not)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = _absolute(node.module or "", node.level, package)
        # `from x import y` where y is a submodule imports x.y; otherwise y is a name in x.
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        called = (
            func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        )
        name = _literal(node.args[0])
        if called not in ("import_module", "__import__") or name is None:
            return []
        if called == "import_module" and name.startswith("."):
            anchor = _literal(node.args[1]) if len(node.args) > 1 else None
            anchor = anchor or next((_literal(k.value) for k in node.keywords if k.arg == "package"), None)
            if anchor is None:
                return []
            level = len(name) - len(name.lstrip("."))
            return [_absolute(name[level:], level, anchor)]
        return [name]
    return []


def find_faces(trees: dict[str, ast.Module], modules: dict[str, Path]) -> dict[str, dict[str, str]]:
    """Map each face module to {name: the module that importing the name lands in}."""
    faces: dict[str, dict[str, str]] = {}
    for module, tree in trees.items():
        for node in tree.body:
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)):
                continue
            if [getattr(t, "id", None) for t in node.targets] != ["FACE"]:
                continue
            table: dict[str, str] = {}
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                source = _literal(key)
                names = [_literal(n) for n in value.elts] if isinstance(value, ast.Tuple) else []
                for name in names:
                    if source is not None and name is not None:
                        target = f"{source}.{name}" if f"{source}.{name}" in modules else source
                        table[name] = nearest(target, modules) or source
            faces[module] = table
    return faces


def _face_uses(tree: ast.Module, local: str) -> set[str] | None:
    """Return the attributes read as `local.name` in the module, or None if `local` is used bare."""
    attrs: set[str] = set()
    read_off = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == local:
            attrs.add(node.attr)
            read_off.add(id(node.value))
    bare = any(
        isinstance(node, ast.Name) and node.id == local and id(node) not in read_off
        for node in ast.walk(tree)
    )
    return None if bare else attrs


def imports_in(
    tree: ast.Module, module: str, path: Path, modules: dict[str, Path], faces: dict[str, dict[str, str]]
) -> Iterator[tuple[ast.AST, bool, str]]:
    """Yield (node, inside a function, first-party module it lands in) for each import in the module."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node, in_function in _walk(tree):
        names = _imported_names(node, package, modules)
        if isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, package)
            for alias in node.names:
                face = faces.get(f"{base}.{alias.name}")
                if face is not None:  # `from pkg import face`: the names it reads off the face
                    used = _face_uses(tree, alias.asname or alias.name)
                    names.extend(face.values() if used is None else (face[n] for n in used if n in face))
                elif alias.name in faces.get(base, {}):  # `from face import name`
                    names.append(faces[base][alias.name])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                face = faces.get(alias.name)
                if face is not None:
                    used = _face_uses(tree, alias.asname) if alias.asname else None
                    names.extend(face.values() if used is None else (face[n] for n in used if n in face))
        for name in names:
            target = nearest(name, modules)
            if target is not None and target != module:
                yield node, in_function, target


def nearest(name: str, modules: dict[str, Path]) -> str | None:
    """Return the module that importing `name` lands in (`pkg.thing` where thing is a name: `pkg`)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def read_graph(root: Path = ROOT, packages: Iterable[str] = APPS) -> Graph:
    """Parse every module of `packages` under `root` and return the graph of their imports."""
    graph = Graph(find_modules(root, packages))
    trees = {module: ast.parse(path.read_text(), str(path)) for module, path in graph.modules.items()}
    faces = find_faces(trees, graph.modules)
    for module, path in graph.modules.items():
        arrows: dict[str, Edge] = {}
        parent = module.rpartition(".")[0]
        while parent and parent not in graph.modules:
            parent = parent.rpartition(".")[0]
        if parent:
            arrows[parent] = Edge(parent, 0, "package")
        for node, in_function, target in imports_in(trees[module], module, path, graph.modules, faces):
            how = "import_module" if isinstance(node, ast.Call) else "lazy" if in_function else "import"
            edge = Edge(target, node.lineno, how)  # type: ignore[attr-defined]
            if target not in arrows or _rank(edge) < _rank(arrows[target]):
                arrows[target] = edge
        graph.edges[module] = arrows
    return graph


def _rank(edge: Edge) -> tuple[int, int]:
    """Prefer showing the plainest arrow: a top-level import over a lazy one, the earliest line."""
    return ({"package": 0, "import": 1, "lazy": 2, "import_module": 3}[edge.how], edge.line)


def _members(graph: Graph, prefix: str) -> list[str]:
    return sorted(m for m in graph.modules if under(m, prefix))


def reached(graph: Graph, start: Iterable[str]) -> dict[str, tuple[str, Edge] | None]:
    """Breadth-first from `start`: each module reached, with the arrow that first reached it."""
    seen: dict[str, tuple[str, Edge] | None] = dict.fromkeys(start)
    queue = deque(seen)
    while queue:
        module = queue.popleft()
        for edge in graph.arrows(module):
            if edge.target not in seen:
                seen[edge.target] = (module, edge)
                queue.append(edge.target)
    return seen


def chain(graph: Graph, source: str, target: str) -> list[tuple[str, Edge | None]] | None:
    """Return the shortest chain from a module under `source` to one under `target`, or None.

    Each step is (module, the arrow that reached it); the first step has no arrow.
    """
    seen = reached(graph, _members(graph, source))
    ends = [m for m in seen if under(m, target) and not under(m, source)]
    if not ends:
        return None
    steps: list[tuple[str, Edge | None]] = []
    module: str | None = ends[0]
    while module is not None:
        came = seen[module]
        steps.append((module, came[1] if came else None))
        module = came[0] if came else None
    return steps[::-1]


def format_chain(steps: list[tuple[str, Edge | None]]) -> str:
    """Write a chain as one line of arrows, then one line per arrow saying where it is."""
    names = " → ".join(module for module, _ in steps)
    lines = [names]
    for (importer, _), (module, edge) in pairwise(steps):
        assert edge is not None
        if edge.how == "package":
            lines.append(f"  {importer} runs its package {module}/__init__.py")
        else:
            lines.append(f"  {importer}:{edge.line} {edge.how} {module}")
    return "\n".join(lines)


def reach_counts(graph: Graph, apps: Iterable[str] = APPS) -> dict[str, dict[str, int]]:
    """For each app, how many modules of each other app its modules reach together."""
    present = [app for app in apps if _members(graph, app)]
    counts: dict[str, dict[str, int]] = {}
    for app in present:
        seen = reached(graph, _members(graph, app))
        counts[app] = {other: sum(1 for m in seen if app_of(m) == other) for other in present if other != app}
    return counts


def widest(graph: Graph, app: str, other: str) -> tuple[str, int]:
    """Return the module of `app` that reaches the most modules of `other`, and how many."""
    best = ("", 0)
    for module in _members(graph, app):
        count = sum(1 for m in reached(graph, [module]) if app_of(m) == other)
        if count > best[1]:
            best = (module, count)
    return best


def app_arrows(graph: Graph, apps: Iterable[str] = APPS) -> dict[str, list[str]]:
    """For each app, the other apps its own modules import (directly, lazy imports included)."""
    present = [app for app in apps if _members(graph, app)]
    arrows: dict[str, list[str]] = {}
    for app in present:
        targets = {
            app_of(e.target) for m in _members(graph, app) for e in graph.arrows(m) if e.how != "package"
        }
        arrows[app] = [other for other in present if other in targets and other != app]
    return arrows


def markdown(graph: Graph, apps: Iterable[str] = APPS) -> str:
    """Write the apps' arrows and the reach table as docs/architecture.md shows them."""
    counts = reach_counts(graph, apps)
    present = list(counts)
    sizes = {app: len(_members(graph, app)) for app in present}
    lines = ["| app | modules | imports |", "|---|---|---|"]
    for app, targets in app_arrows(graph, present).items():
        lines.append(f"| `{app}` | {sizes[app]} | {', '.join(f'`{t}`' for t in targets) or 'no app'} |")
    lines += ["", "| reaches → | " + " | ".join(present) + " |", "|---" * (len(present) + 1) + "|"]
    for app in present:
        cells = " | ".join("–" if other == app else str(counts[app][other]) for other in present)
        lines.append(f"| {app} | {cells} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.reach", description=__doc__.splitlines()[0])
    parser.add_argument("--chain", nargs=2, metavar=("FROM", "TO"), help="print the shortest chain")
    parser.add_argument(
        "--markdown", action="store_true", help="print the arrows and reach table in Markdown"
    )
    args = parser.parse_args(argv)
    graph = read_graph()
    if args.markdown:
        print(markdown(graph), end="")
        return 0
    if args.chain:
        steps = chain(graph, *args.chain)
        print(format_chain(steps) if steps else f"{args.chain[0]} does not reach {args.chain[1]}")
        return 0
    counts = reach_counts(graph)
    apps = list(counts)
    sizes = {app: len(_members(graph, app)) for app in apps}
    width = max(len(app) for app in apps)
    print(
        "modules reached (rows reach columns); modules per app: " + ", ".join(f"{a} {sizes[a]}" for a in apps)
    )
    cell = max(11, width + 1)  # a column's name never runs into the one before it
    print(" " * width + "".join(f"{app:>{cell}}" for app in apps))
    for app in apps:
        cells = "".join(f"{'-' if o == app else counts[app][o]:>{cell}}" for o in apps)
        print(f"{app:<{width}}{cells}")
    print("widest single module per reach into another app:")
    for app in apps:
        for other in apps:
            if other != app and counts[app][other]:
                module, count = widest(graph, app, other)
                print(f"  {app} → {other}: {module} reaches {count}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
