"""Finds module types: every `Module` subclass defined in a file of this package.

There is no second list of modules anywhere: adding a module type is adding one file here.
Extra packages (tests' own small modules, a site's private modules) can be added by name.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import cache

from sdk.declarations import Module

_INFRASTRUCTURE = {"registry"}


class Catalogue:
    def __init__(self, module_types: list[type[Module]]):
        self._by_kind: dict[str, type[Module]] = {}
        for m in module_types:
            if not m.kind:
                raise TypeError(f"{m.__module__}.{m.__name__} declares no kind")
            other = self._by_kind.get(m.kind)
            if other is not None and other is not m:
                raise TypeError(f"module kind {m.kind!r} is declared twice: {other.__module__} and {m.__module__}")
            self._by_kind[m.kind] = m

    def get(self, kind: str) -> type[Module] | None:
        return self._by_kind.get(kind)

    def __contains__(self, kind: str) -> bool:
        return kind in self._by_kind

    def __iter__(self):
        return iter(sorted(self._by_kind.values(), key=lambda m: (m.category, m.label)))

    def describe(self) -> list[dict]:
        return [m.describe() for m in self]


def _module_types_in(package_name: str) -> list[type[Module]]:
    package = importlib.import_module(package_name)
    found = []
    names = [package_name]
    if hasattr(package, "__path__"):
        names = [
            f"{package_name}.{info.name}"
            for info in pkgutil.iter_modules(package.__path__)
            if info.name not in _INFRASTRUCTURE and not info.name.startswith("_")
        ]
    for name in names:
        mod = importlib.import_module(name)
        for obj in vars(mod).values():
            if inspect.isclass(obj) and issubclass(obj, Module) and obj is not Module and obj.__module__ == mod.__name__:
                found.append(obj)
    return found


@cache
def load(extra_packages: tuple[str, ...] = ()) -> Catalogue:
    types = _module_types_in("modules")
    for name in extra_packages:
        types += _module_types_in(name)
    return Catalogue(types)
