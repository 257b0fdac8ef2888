"""The data's identity over its full content, read from the dataset itself.

A sample's digest is the SHA-256 of the whole sample as the dataset holds it: id, input (every
message and every part, never the 5,120-character thinned copy a log's summaries keep), choices,
target, metadata, files, setup and sandbox. What a sample names by reference is read:

- an image, audio, video or document part, and a file of `files`, that is a local path is
  hashed by its bytes (a changed picture under the same name is a changed sample);
- a `data:` URI holds its bytes, and is hashed as written;
- a remote URL (`https://...`) cannot be read here: it is hashed as written, so the same URL
  serving other bytes is not seen (docs/manifest.md says so).

The per-message `id`s inspect makes up at each run are left out. The data's hash is the
SHA-256 over the sorted `id=digest` lines, so it covers the count, every id and every byte.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

SAMPLE_DIGITS = 10  # hex digits of one sample's digest kept in the manifest: tells samples apart
IDENTITY_DIGITS = 12  # hex digits of the data hash the run identity keeps
REFERENCES = frozenset({"image", "audio", "video", "document"})  # content parts naming bytes
SCHEME = 2  # 1: the summaries' fields (id, input, choices, target); 2: the whole sample


def _sha256(data: str | bytes) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def referenced(value: str) -> str:
    """A reference to bytes as its content: `sha256:<hex>` of a local file, else as written."""
    if value.startswith("data:") or "://" in value:
        return value
    try:
        path = Path(value).expanduser()
        if path.is_file():
            return "sha256:" + _sha256(path.read_bytes())
    except (OSError, ValueError):  # a name too long for a path, a NUL: text, not a file
        pass
    return value


def _resolved(value: Any, in_message: bool = False) -> Any:
    """The value with references read and (inside messages) the made-up `id`s left out."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if in_message and k == "id":
                continue
            out[k] = (referenced(v) if k in REFERENCES and isinstance(v, str)
                      else _resolved(v, in_message))  # fmt: skip
        return out
    if isinstance(value, list):
        return [_resolved(v, in_message) for v in value]
    return value


def sample_content(sample: Any) -> str:
    """The whole sample as canonical JSON, references read (see the module's docstring)."""
    whole = sample.model_dump(mode="json", exclude_none=True, fallback=str)
    whole["input"] = _resolved(whole.get("input"), in_message=True)
    if isinstance(whole.get("files"), dict):
        whole["files"] = {k: referenced(v) if isinstance(v, str) else v
                          for k, v in whole["files"].items()}  # fmt: skip
    whole = {k: v if k in ("input", "files") else _resolved(v) for k, v in whole.items()}
    return json.dumps(whole, sort_keys=True, default=str, separators=(",", ":"))


def sample_digests(samples: Iterable[Any]) -> dict[str, str]:
    """Each sample's full SHA-256 by its id (as text); a repeated id keeps its position."""
    out: dict[str, str] = {}
    for index, sample in enumerate(samples):
        key = str(sample.id) if sample.id is not None else f"#{index}"
        if key in out:
            key = f"{key}#{index}"
        out[key] = _sha256(sample_content(sample))
    return out


def whole_hash(digests: dict[str, str]) -> str:
    """The data's SHA-256: over the sorted `id=digest` lines (count, ids and content)."""
    h = hashlib.sha256()
    for key in sorted(digests):
        h.update(f"{json.dumps(key)}={digests[key]}\n".encode())
    return h.hexdigest()


def data_manifest(samples: Sequence[Any], dataset: Sequence[Any] | None = None) -> dict[str, Any]:
    """The samples run: their hash, count and digests; and the whole dataset's hash and count.

    Args:
        samples: The samples the run asks (the dataset after --limit).
        dataset: The whole dataset, where a limit left some out; None: the same as `samples`.

    """
    digests = sample_digests(samples)
    out: dict[str, Any] = {
        "scheme": SCHEME,
        "sha256": whole_hash(digests),
        "n": len(digests),
        "per_sample": {k: d[:SAMPLE_DIGITS] for k, d in digests.items()},
    }
    if dataset is not None and len(dataset) != len(samples):
        every = sample_digests(dataset)
        out["dataset"] = {"sha256": whole_hash(every), "n": len(every)}
    else:
        out["dataset"] = {"sha256": out["sha256"], "n": out["n"]}
    return out
