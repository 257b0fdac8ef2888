"""The manifest of a run: what went into each score, by content hash, written into its log.

Before the run, `run_manifest` hashes what the tasks and models are made of and `harness eval`
puts it in the eval's metadata (`harness_manifest`), one entry per task and per model:

- data: SHA-256 of the samples' ids, inputs, choices and targets (`harness.logs.data_hash`,
  the function the run identity uses, with all 64 digits), and one digest per sample;
- code: SHA-256 of the source files of the scorers, the solvers and the task function (a
  closure's file and the files of the functions it closes over), and of the model provider;
- judge: for judged scores, the task arguments that name a judge model (secrets redacted) and
  the SHA-256 of each labels file the arguments name;
- sandbox: the task's sandbox spec, and the SHA-256 of its config file where it names one;
- environment: the harness version and git state (commit, dirty or not, a hash of the diff),
  the versions of the packages that matter, Python, and the hardware (CPU and GPU model).

After the run, what only the finished log can give is added to the log through inspect's log
API (`edit_eval_log`, a metadata edit with its provenance, then `write_eval_log`), under
`harness_manifest_outputs`: SHA-256 of the plan's solvers and their parameters (the prompt
templates), and SHA-256 over the ordered per-sample outputs, with one digest per sample and
epoch. The eval's own metadata is left as it was, so the manifest never enters the run
identity (`harness.logs.identity_of`): a re-run on another machine still compares.

No model argument, key or environment variable is written; task arguments pass through
`harness.logs.redact`.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.eval._code_closure import MAX_SOURCE_DEPTH, _functions, code_identity
from harness.eval._data_content import IDENTITY_DIGITS, SAMPLE_DIGITS, data_manifest
from harness.log_integrity import output_digest, scores_digest
from harness.manifest_shape import manifest_problem

MANIFEST_KEY = "harness_manifest"  # eval metadata, written before the run
OUTPUTS_KEY = "harness_manifest_outputs"  # a post-run metadata edit of the log
# 1: data hashed as the summaries hold it; code as the scorer's, solver's and task's files;
# a fixed list of packages. 2: the whole samples; every harness file imported; every
# distribution imported, with its dependencies (harness.eval._data_content, .code_closure).
VERSION = 2
PACKAGES = ("inspect_ai",)  # the environment's packages; each task and model adds its own


def sha256_text(text: str | bytes) -> str:
    """The SHA-256 of a text (UTF-8) or bytes, 64 hex digits."""
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()


def canonical(value: Any) -> str:
    """JSON with sorted keys: the form every hash here is taken of."""
    return json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))


def data_identity(manifest: dict[str, Any]) -> dict[str, str]:
    """The eval metadata `harness_data_hash`: each task's full-content data hash.

    The run identity (`harness.logs.identity_of`) takes it in place of the summaries' hash.
    """
    return {name: str(task["data"]["sha256"])[:IDENTITY_DIGITS]
            for name, task in manifest["tasks"].items()}  # fmt: skip


def source_files(objs: Iterable[Any]) -> list[str]:
    """The source files the objects' functions are defined in, sorted and without repeats."""
    files: set[str] = set()
    for obj in objs:
        for fn in _functions(obj, MAX_SOURCE_DEPTH):
            try:
                path = inspect.getsourcefile(fn)
            except TypeError:  # a builtin
                continue
            if path and Path(path).is_file():
                files.add(str(Path(path).resolve()))
    return sorted(files)


def code_hash(objs: Iterable[Any]) -> str:
    """SHA-256 over the content of the objects' source files.

    File names are left out: a checkout in another folder hashes the same.
    """
    digest = hashlib.sha256()
    for path in source_files(objs):
        digest.update(sha256_text(Path(path).read_bytes()).encode() + b"\n")
    return digest.hexdigest()


def _file_hash(value: Any) -> str | None:
    if isinstance(value, str) and value and Path(value).expanduser().is_file():
        return sha256_text(Path(value).expanduser().read_bytes())
    return None


def judge_manifest(task_args: dict[str, Any]) -> dict[str, Any]:
    """The judge model arguments (redacted) and the SHA-256 of the labels files named."""
    from harness.logs import redact

    judge = {k: redact(k, v) for k, v in sorted(task_args.items())
             if "judge" in k.lower() or "grader" in k.lower()}  # fmt: skip
    labels = {k: h for k, v in sorted(task_args.items())
              if "label" in k.lower() and (h := _file_hash(v)) is not None}  # fmt: skip
    return {"models": judge, "labels": labels} if judge or labels else {}


def sandbox_manifest(sandbox: Any) -> dict[str, Any]:
    """The sandbox spec as text, and its config file's SHA-256 where it names one."""
    if sandbox is None:
        return {}
    kind = getattr(sandbox, "type", None)
    config = getattr(sandbox, "config", None)
    if kind is None and isinstance(sandbox, tuple | list) and sandbox:
        kind, config = sandbox[0], (sandbox[1] if len(sandbox) > 1 else None)
    out: dict[str, Any] = {"type": str(kind if kind is not None else sandbox),
                           "config": canonical(config) if config is not None else None}  # fmt: skip
    if (h := _file_hash(config)) is not None:
        out["config_sha256"] = h
    return out


def task_manifest(task: Any, function: Any, task_args: dict[str, Any], limit: int | None) -> dict:
    """One task's data, code, packages, judge and sandbox, from the task object that will run."""
    dataset = list(task.dataset)
    scorers = task.scorer or []
    scorers = scorers if isinstance(scorers, list) else [scorers]
    ran = code_identity([function, task.solver, *scorers])
    return {
        "data": data_manifest(dataset[: limit or None], dataset),
        "code": {
            "scorer": code_hash(scorers),
            "solver": code_hash([task.solver]),
            "task": code_hash([function]),
            "sha256": ran["sha256"],
            "files": ran["files"],
        },
        "packages": ran["packages"],
        "judge": judge_manifest(task_args),
        "sandbox": sandbox_manifest(task.sandbox),
    }


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=20,
                              check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode(errors="replace") if done.returncode == 0 else None


def git_state() -> dict[str, Any]:
    """The harness checkout's commit, whether it is dirty, and a hash of its diff."""
    root = Path(__file__).resolve().parents[2]
    commit = _git(root, "rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None, "note": "not a git checkout"}
    status = _git(root, "status", "--porcelain", "--untracked-files=no") or ""
    diff = _git(root, "diff", "HEAD") or ""
    return {"commit": commit.strip(), "dirty": bool(status.strip()),
            "diff_sha256": sha256_text(diff) if diff else None}  # fmt: skip


def package_versions() -> dict[str, str]:
    """The installed versions of the packages that change what a run computes."""
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name.replace("_", "-"))
        except metadata.PackageNotFoundError:
            continue
    return out


@functools.cache
def hardware() -> dict[str, Any]:
    """The CPU model and core count, and the GPU models where any is visible."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpus: list[str] = []
    torch = sys.modules.get("torch")  # never imported here just to ask
    if torch is not None and torch.cuda.is_available():
        gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {"cpu": cpu, "cores": os.cpu_count(), "gpus": gpus, "system": platform.system()}


def environment() -> dict[str, Any]:
    """What the run ran on: harness version and git state, packages, hardware."""
    versions = package_versions()
    return {"harness": {"version": versions.get("harness"), **git_state()},
            "packages": versions, "hardware": hardware()}  # fmt: skip


def model_code(models: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Each model provider's code, by the model's name in the log.

    The SHA-256 of its class's source (`source`), and the files and packages it imports
    (`harness.eval._code_closure`).
    """
    return {str(m): {"source": code_hash([type(m.api)]), **code_identity([type(m.api)])}
            for m in models}  # fmt: skip


def run_manifest(
    tasks: Sequence[Any], functions: Sequence[Any], models: Sequence[Any],
    task_args: dict[str, Any], limit: int | None,
) -> dict[str, Any]:  # fmt: skip
    """The manifest `harness eval` writes into the eval's metadata before it runs."""
    return {
        "version": VERSION,
        "environment": environment(),
        "models": model_code(models),
        "tasks": {
            str(task.name).split("/")[-1]: task_manifest(task, fn, task_args, limit)
            for task, fn in zip(tasks, functions, strict=True)
        },
    }


def outputs_manifest(log: Any, samples: Iterable[Any] | None = None) -> dict[str, Any]:
    """What the finished log gives: the plan's hash and the ordered outputs' hash.

    `samples` are the log's samples where the log was read without them (its header only).
    """
    steps = [{"solver": s.solver, "params": s.params} for s in log.plan.steps]
    digests: list[tuple[tuple[str, int], str]] = []
    scores: dict[str, str] = {}  # the scores' digests: the tamper check (harness.log_integrity)
    for s in samples if samples is not None else log.samples or []:
        text = s.output.completion if s.output is not None else ""
        error = s.error.message if s.error is not None else None
        digest = output_digest(s.id, s.epoch, text, error)[:SAMPLE_DIGITS]
        digests.append(((str(s.id), s.epoch), digest))
        values = {name: score.value for name, score in (s.scores or {}).items()}
        scores[f"{s.id}#{s.epoch}"] = scores_digest(values)[:SAMPLE_DIGITS]
    per_sample = {f"{sid}#{epoch}": d for (sid, epoch), d in sorted(digests)}
    outputs = hashlib.sha256()
    for key, digest in per_sample.items():
        outputs.update(f"{key}={digest}\n".encode())
    return {
        "prompt": sha256_text(canonical(steps)),
        "outputs": outputs.hexdigest(),
        "per_sample": per_sample,
        "scores": dict(sorted(scores.items())),
        "written": "after the run, by inspect's edit_eval_log (a metadata edit of the log)",
    }


def _write_outputs(location: str) -> bool:
    from inspect_ai.log import (
        MetadataEdit,
        ProvenanceData,
        edit_eval_log,
        read_eval_log,
        read_eval_log_samples,
        write_eval_log,
    )

    eval_zip = location.endswith(".eval")
    log = read_eval_log(location, header_only=eval_zip)
    if log.status != "success" or OUTPUTS_KEY in (log.metadata or {}):
        return False
    samples = read_eval_log_samples(location, all_samples_required=False) if eval_zip else None
    edit = MetadataEdit(metadata_set={OUTPUTS_KEY: outputs_manifest(log, samples)})
    provenance = ProvenanceData(author="harness eval", reason="the manifest's outputs hash")
    # an .eval zip gets a new header appended; its samples are not written again
    write_eval_log(edit_eval_log(log, [edit], provenance), location, header_only=eval_zip)
    return True


def write_outputs(location: str) -> bool:
    """Add the outputs' manifest to a finished log that has none; whether it was added.

    The samples are streamed (bounded memory); the edit goes through inspect's log API
    (`edit_eval_log`), and an `.eval` log gets its header rewritten only. Run in a worker
    thread: inspect's reader runs an event loop of its own (see `harness.logs.read_full_log`).
    """
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_write_outputs, location).result()


@dataclass(frozen=True)
class Manifest:
    """One log's manifest, assembled from what the run wrote before and after it."""

    task: str  # the task it covers
    model: str  # the model it covers
    data: dict[str, Any]  # sha256, n, per_sample
    code: dict[str, Any]  # scorer, solver, task and model source hashes
    prompt: str | None  # SHA-256 of the plan's solvers and parameters (None: not written)
    outputs: str | None  # SHA-256 of the ordered per-sample outputs (None: not written)
    output_samples: dict[str, str]  # "id#epoch" -> digest
    judge: dict[str, Any]  # judge models and labels hashes ({} where nothing is judged)
    sandbox: dict[str, Any]  # sandbox spec ({} without one)
    harness: dict[str, Any]  # version, commit, dirty, diff_sha256
    packages: dict[str, str]  # versions
    hardware: dict[str, Any]  # cpu, cores, gpus
    extra: dict[str, Any] = field(default_factory=dict)  # the outputs edit's note
    version: int = VERSION  # the manifest's version (1: thinner; see VERSION), not in as_dict

    def as_dict(self, per_sample: bool = False) -> dict[str, Any]:
        """The manifest as JSON-ready data; per-sample digests only when asked."""
        data = dict(self.data)
        if not per_sample:
            data.pop("per_sample", None)
        out = {
            "task": self.task, "model": self.model, "data": data, "prompt": self.prompt,
            "code": self.code, "judge": self.judge, "sandbox": self.sandbox,
            "harness": self.harness, "packages": self.packages, "hardware": self.hardware,
            "outputs": self.outputs, **self.extra,
        }  # fmt: skip
        if per_sample:
            out["output_samples"] = self.output_samples
        return out

    @property
    def digest(self) -> str:
        """12 hex digits naming the manifest (over everything but per-sample digests)."""
        return sha256_text(canonical(self.as_dict()))[:12]


def manifest_of(record: Any) -> Manifest | None:
    """The manifest of a `LogRecord`, or None for a log written without one.

    `read_log` leaves out a log whose manifest has the wrong shape; a record made another way
    with such a manifest reads as having none (`harness.manifest_shape`).
    """
    if manifest_problem(record.metadata, record.current_metadata):
        return None
    before = record.metadata.get(MANIFEST_KEY)
    if not isinstance(before, dict) or not isinstance(before.get("tasks"), dict):
        return None
    mine = before["tasks"].get(record.task)
    if not isinstance(mine, dict):
        return None
    after = record.current_metadata.get(OUTPUTS_KEY)
    after = after if isinstance(after, dict) else {}
    env = before.get("environment") if isinstance(before.get("environment"), dict) else {}
    model_spec = record.identity.model
    models = before.get("models") if isinstance(before.get("models"), dict) else {}
    code = dict(mine.get("code") or {})
    packages = dict(env.get("packages") or {})
    packages.update(mine.get("packages") or {})
    model = models.get(model_spec)
    if isinstance(model, dict):  # version 2: the provider's files and packages join the task's
        code["model"] = model.get("source")
        code["files"] = {**(code.get("files") or {}), **(model.get("files") or {})}
        packages.update(model.get("packages") or {})
    else:
        code["model"] = model
    return Manifest(
        task=record.task,
        model=model_spec,
        data=dict(mine.get("data") or {}),
        code=code,
        prompt=after.get("prompt"),
        outputs=after.get("outputs"),
        output_samples=dict(after.get("per_sample") or {}),
        judge=dict(mine.get("judge") or {}),
        sandbox=dict(mine.get("sandbox") or {}),
        harness=dict(env.get("harness") or {}),
        packages=packages,
        hardware=dict(env.get("hardware") or {}),
        extra={"outputs_written": after.get("written")} if after else {},
        version=int(before.get("version") or 1) if str(before.get("version")).isdigit() else 1,
    )
