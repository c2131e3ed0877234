"""A face: a module that answers names from other modules, importing each only when it is first asked.

A package's `__init__` that gathers names for its callers (`capacity.services`, `capacity.views`,
`capacity.port`) would otherwise import every module it names, so that one name asked of it loads them
all. The face is a literal table, `FACE = {"module": ("name", ...)}`, that `devtools.reach` reads, so the
reach of `from capacity.services import release` is that of `capacity.services.release` alone:

    FACE = {"capacity.access": ("EVERYONE", "Scope"), "capacity.services.release": ("release",)}
    lazy_face(__name__, FACE)

A name may also be a submodule of its module (`"capacity.services": ("usage_hooks",)`).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Mapping, Sequence
from importlib import import_module
from typing import Any


def lazy_face(module_name: str, face: Mapping[str, Sequence[str]]) -> None:
    """Make the module `module_name` answer each name of `face` from its module, on first use."""
    if module_name in face:
        raise ValueError(f"the face {module_name} cannot answer names from itself")
    if any(isinstance(names, str) for names in face.values()):
        raise TypeError(f'the face {module_name} names a module\'s names as a tuple: ("name",)')
    module = sys.modules[module_name]
    source = {name: where for where, names in face.items() for name in names}

    def load(name: str) -> Any:
        where = import_module(source[name])
        try:
            return getattr(where, name)
        except AttributeError:
            return import_module(f"{where.__name__}.{name}")

    class Face(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            if name not in source:
                raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
            value = load(name)
            setattr(self, name, value)
            return value

        def __dir__(self) -> list[str]:
            return sorted({*super().__dir__(), *source})

        def __setattr__(self, name: str, value: Any) -> None:
            # Importing a submodule sets it as its package's attribute: where a face name is also a
            # submodule's name (`capacity.services.reserve`), the face keeps answering its name, as
            # an eager `from .reserve import reserve` in the package did.
            if (
                name in source
                and isinstance(value, types.ModuleType)
                and value.__name__ == f"{module_name}.{name}"
            ):
                value = load(name)
            super().__setattr__(name, value)

    module.__class__ = Face
