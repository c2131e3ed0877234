"""The reach reader on small made-up trees: it follows every kind of import through any chain."""

from __future__ import annotations

from pathlib import Path

from devtools import reach


def tree(root: Path, files: dict[str, str]) -> reach.Graph:
    """Write `files` (path: source) under `root` and read the graph of packages a, b and c."""
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    for package in ("a", "b", "c"):
        (root / package).mkdir(exist_ok=True)
        (root / package / "__init__.py").touch()
    return reach.read_graph(root, ("a", "b", "c"))


def names(steps) -> list[str]:
    return [module for module, _ in steps]


def test_an_import_inside_a_function_reaches_as_far_as_one_at_the_top(tmp_path) -> None:
    graph = tree(tmp_path, {"a/views.py": "def show():\n    from b.models import Thing\n", "b/models.py": ""})
    steps = reach.chain(graph, "a", "b")
    assert names(steps) == ["a.views", "b.models"]
    assert steps[1][1].how == "lazy" and steps[1][1].line == 2


def test_reach_follows_a_chain_through_a_third_package(tmp_path) -> None:
    graph = tree(
        tmp_path,
        {
            "a/api.py": "from c.errors import Failed\n",
            "c/errors.py": "import json\n\ndef code():\n    from c import codes\n",
            "c/codes.py": "from b.access import may\n",
            "b/access.py": "",
        },
    )
    assert names(reach.chain(graph, "a", "b")) == ["a.api", "c.errors", "c.codes", "b.access"]
    assert "b.access" in reach.reached(graph, ["a.api"])


def test_no_chain_when_no_import_leads_there(tmp_path) -> None:
    graph = tree(tmp_path, {"a/api.py": "import os\nfrom c import x\n", "b/access.py": "import a.api\n"})
    assert reach.chain(graph, "a", "b") is None
    assert reach.chain(graph, "b", "a") is not None


def test_from_package_import_submodule_counts_as_importing_the_submodule(tmp_path) -> None:
    graph = tree(
        tmp_path,
        {
            "a/one.py": "from c import sub\n",
            "a/two.py": "from c import name\n",
            "c/sub.py": "import b.deep\n",
            "b/deep.py": "",
        },
    )
    assert "b.deep" in reach.reached(graph, ["a.one"])
    # `name` is not a module of c: the import runs c/__init__.py only, which imports nothing.
    assert set(reach.reached(graph, ["a.two"])) == {"a.two", "a", "c"}


def test_importing_a_module_runs_the_init_of_every_package_above_it(tmp_path) -> None:
    graph = tree(
        tmp_path,
        {
            "a/api.py": "import c.services.reserve\n",
            "c/services/__init__.py": "from .heavy import *\n",
            "c/services/heavy.py": "from b import models\n",
            "c/services/reserve.py": "",
            "b/models.py": "",
        },
    )
    steps = reach.chain(graph, "a", "b")
    assert names(steps) == ["a.api", "c.services.reserve", "c.services", "c.services.heavy", "b.models"]
    assert steps[2][1].how == "package"


def test_import_module_with_a_literal_name_counts_and_a_computed_one_cannot(tmp_path) -> None:
    graph = tree(
        tmp_path,
        {
            "a/plain.py": "import importlib\n\ndef load():\n    return importlib.import_module('b.jobs')\n",
            "a/relative.py": "from importlib import import_module\nimport_module('.jobs', package='b')\n",
            "a/dunder.py": "__import__('b.jobs')\n",
            "a/computed.py": "import importlib\nNAME = 'b.jobs'\nimportlib.import_module(NAME)\n",
            "b/jobs.py": "",
        },
    )
    for module in ("a.plain", "a.relative", "a.dunder"):
        assert "b.jobs" in reach.reached(graph, [module]), module
    assert "b.jobs" not in reach.reached(graph, ["a.computed"])
    assert reach.chain(graph, "a.plain", "b")[1][1].how == "import_module"


def test_relative_imports_resolve_from_the_importing_package(tmp_path) -> None:
    graph = tree(
        tmp_path,
        {
            "a/api/__init__.py": "from . import views\n",
            "a/api/views.py": "from ..rules import allow\n",
            "a/rules.py": "",
        },
    )
    seen = reach.reached(graph, ["a.api"])
    assert seen["a.api.views"][0] == "a.api" and seen["a.rules"][0] == "a.api.views"


def test_imports_only_for_type_checkers_never_run_and_do_not_count(tmp_path) -> None:
    graph = tree(
        tmp_path,
        {
            "a/types.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from b import hidden\nelse:\n    from c import shown\n"
            ),
            "b/hidden.py": "",
            "c/shown.py": "",
        },
    )
    seen = reach.reached(graph, ["a.types"])
    assert "c.shown" in seen and "b.hidden" not in seen


def test_reach_counts_are_the_modules_of_each_other_app_an_app_reaches(tmp_path) -> None:
    graph = tree(
        tmp_path,
        {"a/one.py": "import b.x\n", "a/two.py": "import b.y\n", "b/x.py": "", "b/y.py": "import c\n"},
    )
    # b.x, b.y and b (their package); c through b.y.
    assert reach.reach_counts(graph, ("a", "b", "c"))["a"] == {"b": 3, "c": 1}
    assert reach.widest(graph, "a", "b") == ("a.one", 2)


def test_the_chain_says_where_each_arrow_is(tmp_path) -> None:
    graph = tree(tmp_path, {"a/api.py": "\n\ndef f():\n    import c.run\n", "c/run.py": "from b import x\n"})
    assert reach.format_chain(reach.chain(graph, "a", "b")) == (
        "a.api → c.run → b\n  a.api:4 lazy c.run\n  c.run:1 import b"
    )


def test_the_command_prints_reach_counts_for_the_real_tree(capsys) -> None:
    assert reach.main([]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split() == [app for app in reach.APPS if (reach.ROOT / app).is_dir()]
    assert "capacity" in out.splitlines()[2]


FACE_SOURCE = (
    "from config.face import lazy_face\n"
    "FACE = {'c.heavy': ('Thing',), 'c.light': ('name',), 'c': ('sub',)}\n"
    "lazy_face(__name__, FACE)\n"
)


def test_a_name_asked_of_a_face_reaches_its_own_module_alone(tmp_path) -> None:
    graph = tree(
        tmp_path,
        {
            "b/face.py": FACE_SOURCE,
            "c/heavy.py": "import b.deep\n",
            "c/light.py": "",
            "c/sub.py": "",
            "b/deep.py": "",
            "a/light.py": "from b.face import name\n",
            "a/heavy.py": "def f():\n    from b.face import Thing\n",
            "a/sub.py": "from b.face import sub\n",
        },
    )
    assert "c.heavy" not in reach.reached(graph, ["b.face"])
    assert set(reach.reached(graph, ["a.light"])) == {"a.light", "a", "b.face", "b", "c.light", "c"}
    assert names(reach.chain(graph, "a.heavy", "b.deep")) == ["a.heavy", "c.heavy", "b.deep"]
    assert "c.sub" in reach.reached(graph, ["a.sub"])


def test_a_face_imported_whole_reaches_the_names_read_off_it(tmp_path) -> None:
    graph = tree(
        tmp_path,
        {
            "b/face.py": FACE_SOURCE,
            "c/heavy.py": "",
            "c/light.py": "",
            "c/sub.py": "",
            "a/reads.py": "from b import face\n\ndef f():\n    return face.name\n",
            "a/aliased.py": "import b.face as f\nf.Thing\n",
            "a/hands.py": "from b import face\n\ndef f():\n    return face\n",
        },
    )
    assert "c.light" in reach.reached(graph, ["a.reads"])
    assert "c.heavy" not in reach.reached(graph, ["a.reads"])
    assert {"c.heavy"} <= set(reach.reached(graph, ["a.aliased"])) and "c.light" not in reach.reached(
        graph, ["a.aliased"]
    )
    # Handed around whole, the face may be asked any of its names.
    assert {"c.heavy", "c.light", "c.sub"} <= set(reach.reached(graph, ["a.hands"]))


def test_the_markdown_table_has_a_row_and_a_column_per_app(tmp_path) -> None:
    graph = tree(tmp_path, {"a/one.py": "import b.x\n", "b/x.py": "import c\n"})
    text = reach.markdown(graph, ("a", "b", "c"))
    assert "| `a` | 2 | `b` |" in text
    assert "| reaches → | a | b | c |" in text
    assert "| a | – | 2 | 1 |" in text
