"""The code a run's score depends on: source files by content, and distributions by version.

From the modules of the task function, its scorers and solvers (and the functions their
closures hold) and the model provider, every `harness` module they import is followed, read
from the source (`ast`), so an import inside a function counts as one at the top, and a module
is never imported to be hashed. A package's `__init__.py` counts with each module under it.

- files: each followed module's source file by its path under the checkout
  (`harness/answer_extraction.py`) and its SHA-256; a root outside the `harness`
  package (a task file of the user's) by its module name and file name;
- packages: the installed distributions that own the third-party modules those files import
  (`math_verify` -> math-verify), and the distributions those require (their declared
  dependencies, extras left out), each with its exact version, and Python's.

Not covered: a module reached only through a string (a registry's `"module:NAME"` target, an
`importlib.import_module` call), a file read at run time that is not a sample's, and a
distribution's own source (its version stands for it).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import platform
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import harness

PACKAGE = "harness"
ROOT = Path(harness.__file__).resolve().parent  # the harness package folder
ALWAYS = ("inspect_ai",)  # the engine, whatever a task imports


MAX_SOURCE_DEPTH = 3  # closures followed from a scorer or solver to the functions it wraps


def _functions(obj: Any, depth: int) -> Iterable[Any]:
    """The function behind a scorer or solver, and those its closure holds, to a depth."""
    if depth < 0 or obj is None:
        return
    if isinstance(obj, Sequence) and not isinstance(obj, str):  # a chain of solvers
        for item in obj:
            yield from _functions(item, depth)
        return
    fn = inspect.unwrap(obj) if callable(obj) else obj
    if not inspect.isfunction(fn):
        fn = type(fn) if not inspect.isclass(fn) else fn
        if inspect.isclass(fn):
            yield fn
        return
    yield fn
    for cell in fn.__closure__ or ():
        try:
            inner = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if callable(inner) or _solver_list(inner):
            yield from _functions(inner, depth - 1)


def _solver_list(value: Any) -> bool:
    """A short list of callables (a chain's steps), not data a closure happens to hold."""
    if isinstance(value, str) or not isinstance(value, Sequence) or len(value) > 64:
        return False
    return bool(value) and all(callable(v) for v in value)


def module_file(name: str) -> Path | None:
    """The source file of a `harness` module (a package's `__init__.py`), never imported."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = ROOT.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _key(path: Path) -> str:
    """A harness file by its path under the checkout; another file by its name."""
    try:
        return path.relative_to(ROOT.parent).as_posix()
    except ValueError:
        return path.name


@functools.lru_cache(maxsize=4096)
def _read(path: Path, mtime_ns: int) -> tuple[str, tuple[str, ...]]:
    """A source file's SHA-256 and the absolute module names it imports (any depth)."""
    source = path.read_bytes()
    digest = hashlib.sha256(source).hexdigest()
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return digest, ()
    return digest, tuple(sorted(_imports(tree, path)))


def _package_of(path: Path) -> str | None:
    """The dotted package a harness file lies in (for its relative imports)."""
    try:
        rel = path.relative_to(ROOT.parent)
    except ValueError:
        return None
    return ".".join(rel.parent.parts)


def _imports(tree: ast.AST, path: Path) -> set[str]:
    names: set[str] = set()
    package = _package_of(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if package is None:
                    continue
                parts = package.split(".")
                base_parts = parts[: len(parts) - node.level + 1]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # maybe submodules
    return {n for n in names if n}


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def root_modules(objs: Iterable[Any]) -> tuple[list[str], list[Path], set[str]]:
    """The modules the objects are defined in: harness ones by name, others by file.

    Objects an installed distribution provides (inspect's providers) give its top-level name.
    """
    names: set[str] = set()
    files: set[Path] = set()
    tops: set[str] = set()
    for obj in objs:
        for fn in _functions(obj, MAX_SOURCE_DEPTH):
            module = getattr(fn, "__module__", None) or ""
            if module.split(".")[0] == PACKAGE and module_file(module) is not None:
                names.add(module)
                continue
            if module.split(".")[0] in _outside():
                tops.add(module.split(".")[0])
                continue
            try:
                source = inspect.getsourcefile(fn)
            except TypeError:  # a builtin
                continue
            if source and Path(source).is_file():
                files.add(Path(source).resolve())
    return sorted(names), sorted(files), tops


@functools.cache
def _owners() -> dict[str, tuple[str, ...]]:
    """Top-level module name -> the installed distributions that provide it (read once)."""
    from importlib import metadata

    return {k: tuple(v) for k, v in metadata.packages_distributions().items()}


def _outside() -> frozenset[str]:
    """Top-level names of installed distributions: their code is covered by their versions."""
    return frozenset(n for n in _owners() if n != PACKAGE)


def closure(objs: Iterable[Any]) -> tuple[dict[str, str], set[str]]:
    """The followed source files (key -> SHA-256) and the third-party top-level names imported."""
    names, extra_files, third = root_modules(objs)
    files: dict[str, str] = {}
    seen: set[str] = set()
    queue = [m for n in names for m in _with_parents(n)]
    pending_files = list(extra_files)
    while queue or pending_files:
        if pending_files:
            path = pending_files.pop()
        else:
            name = queue.pop()
            if name in seen:
                continue
            seen.add(name)
            found = module_file(name)
            if found is None:
                continue
            path = found
        key = _key(path)
        if key in files:
            continue
        digest, imported = _read(path, path.stat().st_mtime_ns)
        files[key] = digest
        for module in imported:
            top = module.split(".")[0]
            if top == PACKAGE:
                queue.extend(m for m in _with_parents(module) if m not in seen)
            elif top not in sys.stdlib_module_names and not top.startswith("_"):
                third.add(top)
    return files, third


def _requirements(dist: str) -> list[str]:
    """A distribution's declared dependencies, extras and unmet markers left out."""
    from importlib import metadata

    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for text in metadata.requires(dist) or []:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        out.append(req.name)
    return out


def normal(name: str) -> str:
    """A distribution's name in one form (PEP 503, `_` for `-`): `math_verify`, `inspect_ai`."""
    return name.lower().replace("-", "_").replace(".", "_")


@functools.cache
def distributions(tops: frozenset[str]) -> dict[str, str]:
    """Versions of the distributions owning `tops`, and of their dependencies, by `normal` name."""
    from importlib import metadata

    owners = _owners()
    queue = [d for top in sorted(tops | set(ALWAYS)) for d in owners.get(top, ())]
    out: dict[str, str] = {}
    while queue:
        dist = queue.pop()
        key = normal(dist)
        if key in out or key == PACKAGE:
            continue
        try:
            out[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
        queue.extend(_requirements(dist))
    return dict(sorted(out.items()))


def code_identity(objs: Iterable[Any]) -> dict[str, Any]:
    """The objects' code: `files` (key -> 12 hex digits), their `sha256`, and `packages`."""
    files, third = closure(objs)
    whole = hashlib.sha256()
    for key, digest in sorted(files.items()):
        whole.update(f"{key}={digest}\n".encode())
    packages = {"python": platform.python_version(), **distributions(frozenset(third))}
    return {"sha256": whole.hexdigest(), "files": {k: d[:12] for k, d in sorted(files.items())},
            "packages": packages}  # fmt: skip
