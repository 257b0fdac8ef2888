"""One lazy registry for every named part: suites, report sections, providers, subcommands.

An entry is a kind, a name and a target: either the object itself (a catalog's `Suite`) or a
`"module:NAME"` string, imported on first use (as lm-evaluation-harness does), so listing the
names stays cheap and heavy modules (torch, transformers) load only when a part is used.

Parts register themselves: the modules that own a kind call `register` for each entry when
they are imported, and `SOURCES` names those modules by string, so the registry imports them the
first time the kind is asked for (the catalog registers a suite's own providers and command group
beside the suite). Nothing here imports a higher floor; a string is not an import.

Other packages add parts the same way: `HARNESS_PLUGINS=my_pkg.parts,other.mod` names modules
imported before any kind is listed; each calls `register` (a suite: `register_suite` in
`harness.suites.catalog`, which registers its providers and commands too).

    >>> register("provider", "echo", "my_pkg.echo:EchoAPI")
    >>> target("provider", "echo")
    'my_pkg.echo:EchoAPI'
"""

from __future__ import annotations

import importlib
import os
from typing import Any

from harness.errors import HarnessUsageError

# the kinds, and the modules whose import registers the built-in entries of each: a suite's own
# providers and command group are declared by its catalog entry, so the catalog registers them
SOURCES: dict[str, tuple[str, ...]] = {
    "suite": ("harness.suites.catalog",),
    "provider": ("harness.models.providers", "harness.suco.provider", "harness.suites.catalog"),
    "local-model": ("harness.models.builtin",),
    "command": ("harness.cli.commands", "harness.suites.catalog"),
    "until": ("harness.board._live_run",),  # `harness eval --until NAME`: stopping rules
}
PLUGINS_ENV = "HARNESS_PLUGINS"

_entries: dict[str, dict[str, Any]] = {kind: {} for kind in SOURCES}
_loaded: set[str] = set()


def register(kind: str, name: str, target: Any) -> None:
    """Add `name` to `kind`; `target` is a `"module:NAME"` string or the object itself.

    Registering a name again with the same target is a no-op (a module imported twice); with
    another target it is an error, never a silent replacement.
    """
    _check_kind(kind)
    if not name:
        raise ValueError(f"a {kind} needs a name")
    known = _entries[kind].get(name)
    if known is not None and known != target:
        raise ValueError(f"{kind} {name!r} is registered twice: {known!r} and {target!r}")
    _entries[kind][name] = target


def _load_sources(kind: str, until: str | None = None) -> None:
    """Import the modules that register `kind`'s built-ins, then the plugins, once each.

    With `until`, stop as soon as that name is registered: `harness board` finds its command in
    `harness.cli.commands` without importing the catalog.
    """
    for module in (*SOURCES[kind], *_plugins()):
        if until is not None and until in _entries[kind]:
            return
        if module not in _loaded:
            _loaded.add(module)
            try:
                importlib.import_module(module)
            except ImportError as ex:
                if module in SOURCES[kind]:
                    raise
                raise HarnessUsageError(
                    f"{PLUGINS_ENV} names {module!r}, which does not import: {ex}"
                ) from None


def _plugins() -> tuple[str, ...]:
    raw = os.environ.get(PLUGINS_ENV, "")
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _check_kind(kind: str) -> None:
    if kind not in _entries:
        raise ValueError(f"unknown registry kind {kind!r}; kinds: {', '.join(_entries)}")


def names(kind: str) -> tuple[str, ...]:
    """Every name registered for `kind`, in registration order."""
    _check_kind(kind)
    _load_sources(kind)
    return tuple(_entries[kind])


def target(kind: str, name: str) -> Any | None:
    """What `name` was registered with (a target string or the object), or None."""
    _check_kind(kind)
    _load_sources(kind, until=name)
    return _entries[kind].get(name)


def get(kind: str, name: str, what: str | None = None) -> Any:
    """The object registered as `name`, importing a `"module:NAME"` target now.

    An unknown name is a one-line usage error naming the closest known one.
    """
    found = target(kind, name)
    if found is None:
        import difflib  # only on the error path: importing the registry stays cheap

        known = names(kind)
        near = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise HarnessUsageError(
            f"unknown {what or kind} {name!r}{hint}; choose one of: {', '.join(sorted(known))}"
        )
    return resolve(found) if isinstance(found, str) else found


def resolve(path: str) -> Any:
    """The object a `"module:NAME"` string names (`NAME` may be dotted), imported now."""
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"{path!r} is not a 'module:NAME' target")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def lazy_face(package: str, homes: dict[str, str]) -> tuple[Any, Any]:
    """A package's `__getattr__` and `__dir__` for its public face (docs/layout.md).

    `homes` maps each public name to the private module (`_intervals`) that defines it; a name
    is imported from there on first use and kept in the package, so importing the package stays
    cheap. Use: `__getattr__, __dir__ = lazy_face(__name__, _HOME)`.
    """

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
        setattr(importlib.import_module(package), name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(homes)

    return __getattr__, __dir__
