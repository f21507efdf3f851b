"""Finds module types: every `Module` subclass defined in a file of this package, and every
component file (sdk/component.py) of the folders given.

There is no second list of modules anywhere: adding a module type is adding one file here (or
one component.yaml in a components folder). Extra packages (tests' own small modules, a site's
private modules) can be added by name.

A built-in module has one version (its `version` counts changes of its outputs, for reuse); a
component keeps every version of its kind: a pipeline's node names the version it was saved with
(`"version"` in its JSON, `for_node`), and the palette offers the latest.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import lru_cache
from pathlib import Path

from modules._component import component_module
from sdk import component
from sdk.declarations import Module

_INFRASTRUCTURE = {"catalogue"}
ROOT = Path(__file__).resolve().parent.parent


def _where(m: type[Module]) -> str:
    """Where a module type is declared, as an error message names it."""
    if m.component is not None:
        return f"{m.component_origin or m.component.file} (version {m.version})"
    return m.__module__


class Catalogue:
    def __init__(self, module_types: list[type[Module]], withheld: dict[str, str] | None = None):
        self._by_kind: dict[str, dict[int, type[Module]]] = {}
        self.withheld = dict(withheld or {})  # kind -> why it is not offered (though it exists)
        for m in module_types:
            self._add(m)

    def _add(self, m: type[Module]) -> None:
        if not m.kind:
            raise TypeError(f"{m.__module__}.{m.__name__} declares no kind")
        versions = self._by_kind.setdefault(m.kind, {})
        others = [o for o in versions.values() if o is not m]
        # a built-in module's kind is declared once; a component's once per version
        clash = next((o for o in others if o.component is None or m.component is None or o.version == m.version), None)
        if clash is not None:
            raise TypeError(f"module kind {m.kind!r} is declared twice: {_where(clash)} and {_where(m)}")
        versions[m.version] = m

    def get(self, kind: str, version: int | None = None) -> type[Module] | None:
        """The module type of a kind: its latest version, or the version asked for (a component's;
        a built-in module has one, whatever its node says)."""
        versions = self._by_kind.get(kind) if isinstance(kind, str) else None
        if not versions:
            return None
        latest = versions[max(versions)]
        if version is None or latest.component is None:
            return latest
        return versions.get(version) if isinstance(version, int) and not isinstance(version, bool) else None

    def for_node(self, node: dict) -> type[Module] | None:
        """The module type a pipeline node runs: its kind, at the version it names (if any)."""
        return self.get(node.get("kind"), node.get("version"))

    def versions(self, kind: str) -> list[int]:
        return sorted(self._by_kind.get(kind, {})) if isinstance(kind, str) else []

    def with_components(self, module_types) -> Catalogue:
        """A new catalogue: this one's module types (every version) and these (TypeError when one
        takes the kind of a built-in module, or a kind and version already here)."""
        return Catalogue([*self.every_version(), *module_types], self.withheld)

    def withholding(self, reasons: dict[str, str]) -> Catalogue:
        """A new catalogue: this one, saying why each of these kinds is not offered (a validation
        names the reason instead of "unknown module kind")."""
        return Catalogue(self.every_version(), {**self.withheld, **reasons})

    def every_version(self) -> list[type[Module]]:
        return [m for versions in self._by_kind.values() for m in versions.values()]

    def __contains__(self, kind: str) -> bool:
        return kind in self._by_kind

    def __iter__(self):
        """The latest version of each kind, by category and label."""
        latest = [versions[max(versions)] for versions in self._by_kind.values()]
        return iter(sorted(latest, key=lambda m: (m.category, m.label)))

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


def _shown(path: Path) -> str:
    """A component file as the catalogue names it: relative to the project when inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def components_in(folders) -> list[type[Module]]:
    """The module type of every component.yaml below these folders (a missing folder has none);
    ComponentError for the first bad file, naming it."""
    return [component_module(spec, origin=_shown(spec.file))
            for folder in folders for spec in map(component.load, component.find(folder))]


@lru_cache(maxsize=4)
def load(extra_packages: tuple[str, ...] = (), component_dirs: tuple = (), stamp: tuple = ()) -> Catalogue:
    """The catalogue of these packages and folders; `stamp` (what the caller saw of the component
    files: paths, times, sizes) makes an edited file load again."""
    types = _module_types_in("modules")
    for name in extra_packages:
        types += _module_types_in(name)
    return Catalogue(types + components_in(component_dirs))
