"""Public names a package loads on first use (PEP 562's module `__getattr__`), so that importing the package does
not import modules that most programs never need.

A lazy name must not also be the name of one of the package's modules: importing `package.x` sets the
package's attribute `x` to that module (tests/test_packaging.py checks it).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, names: dict[str, str]) -> Callable[[str], Any]:
    """A module-level `__getattr__` for `package`: `names` maps each lazy name to the module that holds it."""
    namespace = vars(import_module(package))

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module}", package), name)
        namespace[name] = value  # found once, then an ordinary attribute
        return value

    return __getattr__
