"""Two manifests, field by field: what drifted, named down to the sample, the file, the package.

- data: the samples' digests (full content, `harness.eval._data_content`), the whole hash and
  the count: an appended, deleted or edited sample is a drift, named by id (the first few) and
  counted; the whole dataset's hash and count too, so a `--limit` run still sees an append;
- code: each imported source file's digest (`harness.eval._code_closure`), named by path;
- packages: each distribution's exact version, named;
- prompt, judge, sandbox: their hashes; outputs: the per-sample output digests;
- harness (version, commit) and hardware: shown, never a drift.

An older manifest (version 1: data as the summaries hold it, the scorer's, solver's and task's
files, a fixed list of packages) is compared on what it has; what it lacks is "not compared"
or "partly compared", with what could not be checked named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from harness.eval._code_closure import normal
from harness.eval._manifest import Manifest

Status = Literal["same", "drifted", "differs", "not compared", "partly compared"]
DRIFTS = ("data", "prompt", "code", "judge", "sandbox", "packages", "outputs")
SHOWN = ("harness", "hardware")  # shown, never counted as drift
FIRST = 3  # ids, files or packages named before "..."
CODE_V1 = ("scorer", "solver", "task", "model")  # version 1's code hashes


@dataclass(frozen=True)
class FieldDrift:
    """One field of the manifest, old against new."""

    field: str  # data, prompt, code, judge, sandbox, packages, outputs, harness, hardware
    status: Status  # "same", "drifted" (counted), "differs" (shown only), or not (fully) compared
    detail: str  # what changed, or what was compared, and what could not be


def _short(h: Any) -> str:
    return str(h)[:12] if h else "none"


def _first(keys: list[str]) -> str:
    shown = ", ".join(keys[:FIRST])
    return shown + (", ..." if len(keys) > FIRST else "")


def _compare_hash(name: str, old: Any, new: Any) -> FieldDrift:
    if old is None or new is None:
        return FieldDrift(name, "not compared", "not in both manifests")
    if old == new:
        return FieldDrift(name, "same", f"sha256 {_short(old)}")
    return FieldDrift(name, "drifted", f"{_short(old)} -> {_short(new)}")


def _compare_dict(name: str, old: dict[str, Any], new: dict[str, Any]) -> FieldDrift:
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    if not keys:
        return FieldDrift(name, "same", ", ".join(sorted(old)) or "(none)")
    shown = "; ".join(f"{k} {_short(old.get(k))} -> {_short(new.get(k))}" for k in keys)
    return FieldDrift(name, "drifted", shown)


def _sample_changes(old: dict[str, str], new: dict[str, str], limited: bool) -> list[str]:
    """What differs between two runs' per-sample digests, in words (empty: nothing)."""
    shared = sorted(set(old) & set(new))
    changed = [k for k in shared if old[k] != new[k]]
    added = sorted(set(new) - set(old))
    deleted = [] if limited else sorted(set(old) - set(new))
    parts = []
    if changed:
        parts.append(f"{len(changed)} of {len(shared)} samples differ (first: {_first(changed)})")
    if added:
        parts.append(f"{len(added)} added ({_first(added)})")
    if deleted:
        parts.append(f"{len(deleted)} deleted ({_first(deleted)})")
    return parts


def compare_data(old: dict[str, Any], new: dict[str, Any], limited: bool = False) -> FieldDrift:
    """The data, old against new; `limited`: the new run asked fewer samples (--limit)."""
    old_s, new_s = old.get("per_sample") or {}, new.get("per_sample") or {}
    if old.get("scheme") != new.get("scheme"):  # an older manifest: ids and count only
        parts = _sample_changes(dict.fromkeys(old_s, ""), dict.fromkeys(new_s, ""), limited)
        if parts:
            return FieldDrift("data", "drifted", "; ".join(parts))
        return FieldDrift("data", "partly compared", f"the same {len(new_s)} sample ids; "
                          "content not checked (the old manifest hashes data by an older "
                          "scheme)")  # fmt: skip
    parts = _sample_changes(old_s, new_s, limited)
    if not parts and not limited and old.get("sha256") != new.get("sha256"):
        parts.append(f"whole hash {_short(old.get('sha256'))} -> {_short(new.get('sha256'))}")
    old_d, new_d = old.get("dataset") or {}, new.get("dataset") or {}
    if old_d.get("sha256") != new_d.get("sha256") and (limited or not parts):
        parts.append(f"the whole dataset differs ({old_d.get('n')} -> {new_d.get('n')} "
                     "samples)")  # fmt: skip
    if parts:
        return FieldDrift("data", "drifted", f"{old.get('n')} -> {new.get('n')} samples: "
                          + "; ".join(parts))  # fmt: skip
    if limited:
        whole = f"the whole dataset of {new_d.get('n')} the same"
        detail = f"exact on {len(new_s)} samples (of the old run's {len(old_s)}; {whole})"
        return FieldDrift("data", "same", detail)
    return FieldDrift("data", "same", f"exact on {len(new_s)} samples, sha256 "
                      f"{_short(new.get('sha256'))}")  # fmt: skip


def compare_code(old: dict[str, Any], new: dict[str, Any]) -> FieldDrift:
    """Every imported source file, old against new; an older manifest on its four hashes."""
    if "files" not in old or "files" not in new:
        shared = {k: old.get(k) for k in CODE_V1 if k in old and k in new}
        found = _compare_dict("code", shared, {k: new.get(k) for k in shared})
        if found.status == "drifted":
            return found
        return FieldDrift("code", "partly compared", f"{found.detail} the same; the modules "
                          "they import not checked (the old manifest lacks them)")  # fmt: skip
    a, b = old["files"], new["files"]
    changed = sorted(k for k in set(a) & set(b) if a[k] != b[k])
    added, removed = sorted(set(b) - set(a)), sorted(set(a) - set(b))
    parts = [f"{k} {a[k]} -> {b[k]}" for k in changed[:FIRST]]
    if len(changed) > FIRST:
        parts.append(f"and {len(changed) - FIRST} more files")
    if added:
        parts.append(f"{len(added)} files newly imported ({_first(added)})")
    if removed:
        parts.append(f"{len(removed)} files no longer imported ({_first(removed)})")
    if parts:
        return FieldDrift("code", "drifted", "; ".join(parts))
    return FieldDrift("code", "same", f"{len(a)} files, sha256 {_short(new.get('sha256'))}")


def compare_packages(old: dict[str, str], new: dict[str, str], version: int) -> FieldDrift:
    """Versions by distribution; against an older manifest, only the packages it lists."""
    a = {normal(k): v for k, v in old.items() if normal(k) != "harness"}
    b = {normal(k): v for k, v in new.items() if normal(k) != "harness"}
    changed = sorted(k for k in set(a) & set(b) if a[k] != b[k])
    parts = [f"{k} {a[k]} -> {b[k]}" for k in changed]
    unchecked: list[str] = []
    if version >= 2:
        parts += [f"{k} {b[k]} added" for k in sorted(set(b) - set(a))]
        parts += [f"{k} {a[k]} removed" for k in sorted(set(a) - set(b))]
    else:
        unchecked = sorted(set(a) ^ set(b))
    if parts:
        return FieldDrift("packages", "drifted", "; ".join(parts))
    if unchecked:
        return FieldDrift("packages", "partly compared", f"{len(set(a) & set(b))} the same; not "
                          f"in the old manifest: {_first(unchecked)}")  # fmt: skip
    return FieldDrift("packages", "same", f"{len(b)} packages, versions exact")


def compare_outputs(old: dict[str, str], new: dict[str, str]) -> FieldDrift:
    """The per-sample output digests on the sample-epochs both runs have."""
    shared = sorted(set(old) & set(new))
    if not shared:
        return FieldDrift("outputs", "not compared", "no sample-epochs in both runs")
    differ = [k for k in shared if old[k] != new[k]]
    if differ:
        return FieldDrift("outputs", "drifted", f"{len(differ)} of {len(shared)} sample-epochs "
                          f"differ (first: {_first(differ)})")  # fmt: skip
    whole = "" if len(shared) == len(old) else f" (of the old run's {len(old)})"
    return FieldDrift("outputs", "same", f"exact on {len(shared)} sample-epochs{whole}")


def compare_manifests(
    old: Manifest, new: Manifest, limited: bool = False
) -> tuple[FieldDrift, ...]:
    """Every field of two manifests: drifts first, then what is shown only."""
    fields = [
        compare_data(old.data, new.data, limited),
        _compare_hash("prompt", old.prompt, new.prompt),
        compare_code(old.code, new.code),
        _compare_dict("judge", old.judge, new.judge),
        _compare_dict("sandbox", old.sandbox, new.sandbox),
        compare_packages(old.packages, new.packages, old.version),
        compare_outputs(old.output_samples, new.output_samples),
    ]
    for name, a, b in (("harness", old.harness, new.harness),
                       ("hardware", old.hardware, new.hardware)):  # fmt: skip
        drift = _compare_dict(name, a, b)
        moved = drift.status == "drifted"
        detail = drift.detail + (" (shown, not a drift)" if moved else "")
        fields.append(FieldDrift(name, "differs" if moved else "same", detail))
    return tuple(fields)
