"""Hostile `.eval` logs made from a good one, for tests and `benchmarks/hostile_logs.py`.

A log is a zip of JSON members compressed with zstd (inspect's layout). Each function here
copies a log and changes one thing: a member replaced by a zstd bomb (a few KB that inflate to
GBs), the manifest's fields given other types, or the samples' answers and scores rewritten
with the manifest left as it was. `manifest_log` writes a small log with a manifest directly
(no eval run), its outputs digests made by the harness's own `outputs_manifest`.
"""

from __future__ import annotations

import json
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import zipfile_zstd  # noqa: F401  (registers zstd with zipfile)

ZSTD = 93  # zipfile's compression number for zstd
Edit = Callable[[dict[str, bytes]], None]


def members(path: Path) -> dict[str, bytes]:
    """Every member of a zip, inflated."""
    with zipfile.ZipFile(path) as z:
        return {name: z.read(name) for name in z.namelist()}


def write_zip(path: Path, content: dict[str, bytes], bombs: dict[str, int] | None = None) -> Path:
    """A zstd zip of `content`; each of `bombs` a member of that many spaces in a JSON string."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for name, data in content.items():
            if name not in (bombs or {}):
                z.writestr(name, data, compress_type=ZSTD)
        for name, size in (bombs or {}).items():
            info = zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0))
            info.compress_type = ZSTD
            with z.open(info, "w", force_zip64=size >= zipfile.ZIP64_LIMIT) as out:
                out.write(b'"')
                chunk = b" " * (1 << 24)
                for start in range(0, size, len(chunk)):
                    out.write(chunk[: size - start])
                out.write(b'"')
    return path


def bomb(source: Path, out: Path, member: str, size: int, declared: int | None = None) -> Path:
    """`source` with `member` replaced by `size` bytes of spaces in a JSON string.

    With `declared`, the zip says the member inflates to that many bytes (a lie: below 4 GB).
    """
    content = members(source)
    write_zip(out, content, {member: size})
    if declared is not None:
        _declare_size(out, member, declared)
    return out


def _declare_size(path: Path, member: str, size: int) -> None:
    """Write `size` as the member's inflated size in its local and central headers."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    data = bytearray(path.read_bytes())
    name = member.encode()
    struct.pack_into("<I", data, info.header_offset + 22, size)  # local header
    at = data.rfind(b"PK\x01\x02", 0, data.rfind(name))  # central header of the member
    struct.pack_into("<I", data, at + 24, size)
    path.write_bytes(bytes(data))


def edited(source: Path, out: Path, edit: Edit) -> Path:
    """`source` with its members (inflated) changed by `edit` in place."""
    content = members(source)
    edit(content)
    return write_zip(out, content)


def edit_header(change: Callable[[dict[str, Any]], None]) -> Edit:
    """An edit of header.json's parsed JSON."""

    def apply(content: dict[str, bytes]) -> None:
        header = json.loads(content["header.json"])
        change(header)
        content["header.json"] = json.dumps(header).encode()

    return apply


def set_manifest_field(task: str, field: str, value: Any) -> Edit:
    """Set `harness_manifest.tasks.<task>.<field>` (a dotted `field` goes deeper)."""

    def change(header: dict[str, Any]) -> None:
        node = header["eval"]["metadata"]["harness_manifest"]["tasks"][task]
        *parents, last = field.split(".")
        for part in parents:
            node = node[part]
        node[last] = value

    return edit_header(change)


def rewrite_answers(answer: Callable[[dict[str, Any]], str], value: Any) -> Edit:
    """Every sample's answer set by `answer(sample)` and every score to `value`, in the
    samples and the summaries; the header (and its manifest) left as it was."""

    def apply(content: dict[str, bytes]) -> None:
        for name in [n for n in content if n.startswith("samples/")]:
            sample = json.loads(content[name])
            sample["output"]["completion"] = answer(sample)
            for score in sample["scores"].values():
                score["value"] = value
            content[name] = json.dumps(sample).encode()
        summaries = json.loads(content["summaries.json"])
        for summary in summaries:
            for score in summary["scores"].values():
                score["value"] = value
        content["summaries.json"] = json.dumps(summaries).encode()

    return apply


def manifest_log(
    path: Path, answers: list[str], targets: list[str], *, model: str = "scripted/a"
) -> Path:
    """A finished arith log of `len(answers)` samples with a manifest and its outputs digests.

    Written directly (the layout inspect writes, the fields the reader uses), so a test needs no
    eval run; the digests are the writer's own (`harness.eval._manifest.outputs_manifest`).
    """
    from harness.eval._manifest import MANIFEST_KEY, OUTPUTS_KEY, outputs_manifest

    ids = [f"arith-{i + 1}" for i in range(len(answers))]
    values = ["C" if a == t else "I" for a, t in zip(answers, targets, strict=True)]
    samples = [
        {"id": sid, "epoch": 1, "input": f"{i}+0=", "target": t,
         "output": {"model": model, "completion": a, "choices": []},
         "scores": {"first_integer_match": {"value": v, "answer": a}},
         "metadata": {}, "model_usage": {model: {"input_tokens": 1, "output_tokens": 1,
                                                 "total_tokens": 2}},
         "working_time": 0.1, "total_time": 0.1, "error": None}
        for i, (sid, a, t, v) in enumerate(zip(ids, answers, targets, values, strict=True))
    ]  # fmt: skip
    plan = SimpleNamespace(steps=[SimpleNamespace(solver="generate", params={})])
    objects = [
        SimpleNamespace(id=s["id"], epoch=1, error=None, output=SimpleNamespace(completion=a),
                        scores={k: SimpleNamespace(value=v["value"])
                                for k, v in s["scores"].items()})
        for s, a in zip(samples, answers, strict=True)
    ]  # fmt: skip
    outputs = outputs_manifest(SimpleNamespace(plan=plan), objects)
    manifest = {
        "version": 2,
        "environment": {"harness": {"commit": None}, "packages": {"python": "3.11"},
                        "hardware": {"cpu": "test"}},
        "models": {model: {"source": "0" * 64, "sha256": "0" * 64, "files": {},
                           "packages": {}}},
        "tasks": {"arith": {"data": {"sha256": "1" * 64, "n": len(ids), "per_sample": {}},
                            "code": {"scorer": "2" * 64}, "packages": {}, "judge": {},
                            "sandbox": {}}},
    }  # fmt: skip
    spec = {
        "task": "arith", "task_id": "t", "run_id": "r", "created": "2026-01-01T00:00:00+00:00",
        "model": model, "model_args": {}, "task_args": {"n": len(ids)},
        "dataset": {"name": "arith", "samples": len(ids), "sample_ids": ids},
        "config": {}, "model_generate_config": {}, "packages": {}, "scorers": [],
        "metadata": {"harness_suite": "arith", MANIFEST_KEY: manifest},
    }  # fmt: skip
    header = {
        "version": 2, "status": "success", "eval": spec,
        "plan": {"name": "plan", "steps": [{"solver": "generate", "params": {}}]},
        "results": {"total_samples": len(ids), "completed_samples": len(ids), "scores": []},
        "stats": {}, "metadata": {**spec["metadata"], OUTPUTS_KEY: outputs},
    }  # fmt: skip
    summary_keys = ("id", "epoch", "input", "target", "scores", "metadata", "model_usage",
                    "working_time", "total_time", "error")  # fmt: skip
    summaries = [{k: s[k] for k in summary_keys} for s in samples]
    content = {f"samples/{s['id']}_epoch_1.json": json.dumps(s).encode() for s in samples}
    content["summaries.json"] = json.dumps(summaries).encode()
    content["header.json"] = json.dumps(header).encode()
    return write_zip(path, content)
