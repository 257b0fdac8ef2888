"""The shape a log's manifest must have before anything reads it.

A log is someone else's file, and its manifest (eval metadata `harness_manifest`, written
before the run, and the post-run edit `harness_manifest_outputs`; see
`harness.eval._manifest`) is read by `harness manifest`, `harness reproduce`, the report's cost
rows, the site's manifest files and the tamper check. `manifest_problem` checks every field
those readers use for its type, so that a doctored field (`data` a string, `per_sample` a
list, `version` an object) leaves that log out with its reason (`harness.logs.read_log`)
rather than stopping the report, the site or the command with a traceback. A field that is
absent or null reads as empty, as a log written before the field existed has it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# the same keys as harness.eval._manifest (tests/test_hostile_logs.py checks that they agree)
MANIFEST_KEY = "harness_manifest"
OUTPUTS_KEY = "harness_manifest_outputs"


@dataclass(frozen=True)
class MapOf:
    """An object whose keys are strings and whose values all have one shape."""

    value: Any


Shape = Any  # str, int, Any, MapOf, or a dict of field name -> Shape (an object)
HASHES = MapOf(str)  # name -> digest or version
SCALAR = (str, int, float, bool)

_DATA = {"sha256": str, "n": int, "per_sample": HASHES, "scheme": SCALAR,
         "dataset": {"sha256": str, "n": int}}  # fmt: skip
_CODE = {"files": HASHES, "scorer": str, "solver": str, "task": str, "sha256": str,
         "model": str, "source": str}  # fmt: skip
_TASK = {"data": _DATA, "code": _CODE, "packages": HASHES, "judge": dict, "sandbox": dict}
_MODEL = {"source": str, "sha256": str, "files": HASHES, "packages": HASHES}
MANIFEST: Shape = {
    "version": int,
    "environment": {"harness": dict, "packages": HASHES, "hardware": dict},
    "models": MapOf((_MODEL, str)),
    "tasks": MapOf(_TASK),
}
OUTPUTS: Shape = {"prompt": str, "outputs": str, "per_sample": HASHES, "scores": HASHES,
                  "written": str}  # fmt: skip

_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean",
          dict: "an object", list: "a list"}  # fmt: skip


def _kind(value: Any) -> str:
    return "null" if value is None else _NAMES.get(type(value), type(value).__name__)


def _fits(value: Any, shape: Shape) -> bool:
    """Whether `value` has the type `shape` names at its top (an int is never a bool)."""
    if isinstance(shape, tuple):
        return any(_fits(value, s) for s in shape)
    if isinstance(shape, dict | MapOf) or shape is dict:
        return isinstance(value, dict)
    if shape is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, shape)


def _wanted(shape: Shape) -> str:
    if isinstance(shape, tuple):
        return " or ".join(_wanted(s) for s in shape)
    return "an object" if isinstance(shape, dict | MapOf) else _NAMES.get(shape, str(shape))


def problem(value: Any, shape: Shape, where: str) -> str:
    """What is wrong with `value` at `where`, or "" when it has `shape` (null reads as empty)."""
    if value is None:
        return ""
    if not _fits(value, shape):
        return f"{where} is {_kind(value)}, not {_wanted(shape)}"
    if isinstance(shape, tuple):
        shape = next(s for s in shape if _fits(value, s))
    if isinstance(shape, MapOf):
        for key, item in value.items():
            if found := problem(item, shape.value, f"{where}.{key}"):
                return found
    elif isinstance(shape, dict):
        for key, sub in shape.items():
            if found := problem(value.get(key), sub, f"{where}.{key}"):
                return found
    return ""


def manifest_problem(metadata: Any, current: Any) -> str:
    """What is wrong with a log's manifest, or "" (also when it has none).

    Args:
        metadata: the eval's metadata, where `harness_manifest` is written before the run.
        current: the log's metadata after its edits, where `harness_manifest_outputs` is.

    """
    before = metadata.get(MANIFEST_KEY) if isinstance(metadata, dict) else None
    after = current.get(OUTPUTS_KEY) if isinstance(current, dict) else None
    if found := problem(before, MANIFEST, MANIFEST_KEY):
        return found
    if isinstance(before, dict) and isinstance(before.get("version"), int):
        if before["version"] < 1:
            return f"{MANIFEST_KEY}.version is {before['version']}, not 1 or more"
    return problem(after, OUTPUTS, OUTPUTS_KEY)
