"""Every eval log the harness reads goes through this module.

`harness eval`'s summary, `harness report`, the leaderboard, the token budgets and the runs of
suites that train all read logs here, so they see the same samples, the same errors and the
same identity.

- `read_log(path)` gives a `LogRecord` (the header and one `SampleScore` per sample and epoch),
  or a `BadLog` with its reason. It parses a finished `.eval` zip directly (fast), and falls
  back to inspect-ai's own reader for `.json` logs and other layouts; a file neither can read is
  a `BadLog`, never skipped.
- A log's `LogIdentity` is its suite, task, task arguments, a hash of its dataset's sample ids,
  and its model and model arguments. Two logs are compared only when all but the model agree
  (`LogIdentity.comparable`). `select_logs` keeps the newest finished log of each identity and
  lists the others as superseded.
- `read_full_log`, `read_samples` and `load_training_runs` read whole samples (outputs, and
  metadata beyond the summaries' thinned copy): for replayed outputs, SuCo's trajectories and
  the suites that train.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessUsageError
from harness.log_integrity import tamper_reason
from harness.manifest_shape import OUTPUTS_KEY, manifest_problem
from harness.outside_numbers import check_number
from harness.stats import Design

DesignLookup = Callable[[str], Design]  # a suite's name -> its declared design

# JSON files that eval_set, inspect's viewer bundle and the leaderboard write next to logs
NOT_LOGS = frozenset({"logs.json", "eval-set.json", "listing.json", "leaderboard.json"})

LETTER_SCORES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
MAX_SCORE = 1e15  # |score| read at most: sums and squares of a million such stay finite
MAX_SECONDS = 1e9  # a sample's working or total time (31 years) read at most

# The run identity is inspect's whole `EvalSpec` less the fields listed here, which do not
# change the experiment; a field a later inspect adds is part of the identity until it is
# listed (tests/test_experimental_design.py lists EvalSpec's fields, so a new one fails it).
SPEC_SETTINGS = frozenset(
    {"eval_set_id", "eval_id", "run_id", "created", "task_id",  # made up at each run
     "task_file",  # where the task's file lies on this machine (its code is in the manifest)
     "task_display_name", "task_description", "task_registry_name",  # names: `task` is read
     "task_args_passed", "solver_args_passed",  # subsets of task_args and solver_args
     "tags", "viewer", "headline_metric",  # labels and display
     "metrics",  # inspect's own metrics: every number here is computed from per-sample scores
     "revision", "packages",  # source revision and versions: the manifest compares the code
     "metadata",  # descriptions; harness_sequential and harness_data_hash are read from it
     "shards"}  # a merged log's parts
)  # fmt: skip
# Read by name rather than walked: the task and its arguments (less the design's settings),
# the model, its arguments and base URL (the arm), the generate config (less its settings, the
# seed making a replicate), the config (less its settings), the dataset (sample ids in the data
# hash) and the scorers (name and options).
SPEC_READ = frozenset(
    {"task", "task_args", "model", "model_args", "model_base_url", "model_generate_config",
     "config", "dataset", "scorers"}
)  # fmt: skip
# Fields of inspect's EvalConfig that say how a run ran, not what it measured. `limit` and
# `sample_id` show in the data hash; `epochs_reducer` changes only inspect's own metrics.
CONFIG_SETTINGS = frozenset(
    {"limit", "sample_id", "epochs_reducer", "notification", "fail_on_error",
     "continue_on_fail", "retry_on_error", "max_samples", "max_dataset_memory", "max_tasks",
     "max_subprocesses", "max_sandboxes", "sandbox_cleanup", "sandbox_prebuilt", "log_samples",
     "log_realtime", "log_images", "log_model_api", "log_buffer", "log_shared", "score_display",
     "acp_server"}
)  # fmt: skip
# Fields of EvalDataset: its name and location say where the data came from; the samples run
# (ids and full content) are in the data hash, and `samples` counts the data before --limit.
DATASET_SETTINGS = frozenset({"name", "location", "samples", "sample_ids"})

# Fields of the generate config that say how calls were made, not what was asked; `seed`
# makes a replicate of a configuration, not another configuration.
GENERATE_SETTINGS = frozenset(
    {"max_connections", "max_retries", "timeout", "attempt_timeout", "batch", "cache_prompt"}
)
REPLICATE_FIELD = "seed"


@dataclass(frozen=True)
class LogIdentity:
    """What a log measured.

    Two logs are compared when everything but the model agrees (`comparable`): suite, task,
    task arguments less the suite's declared settings, epochs and the limits, the generate
    config less its seed, solver and its arguments, scorers, and the data's content. Two logs
    that differ only in the generation seed are replicates of one configuration
    (`configuration`); only a log with the same identity in full (`full`), a re-run, is
    superseded by the newer one.
    """

    suite: str  # harness suite (eval metadata `harness_suite`), else the task name
    task: str  # task name, without a package prefix
    task_args: tuple[tuple[str, str], ...]  # sorted (name, JSON value), settings left out
    sample_hash: str  # 12 hex digits of the SHA-256 of the samples' ids, inputs and targets
    n_ids: int  # how many sample ids the dataset had
    model: str  # model spec
    model_args: tuple[tuple[str, str], ...]  # sorted (name, JSON value)
    experiment: tuple[tuple[str, str], ...] = ()  # every other field that defines the run
    replicate: str = ""  # the generation seed as JSON ("" when none was set)

    @property
    def comparable(self) -> tuple[Any, ...]:
        """The key two logs must share to be compared: everything but the model."""
        return (self.suite, self.task, self.task_args, self.sample_hash, self.experiment)

    @property
    def configuration(self) -> tuple[Any, ...]:
        """The key replicates share: everything but the generation seed."""
        return (*self.comparable, self.model, self.model_args)

    @property
    def full(self) -> tuple[Any, ...]:
        """The whole identity: a newer log with the same one supersedes an older."""
        return (*self.configuration, self.replicate)

    @property
    def arm_label(self) -> str:
        """The model spec, with its arguments where it has any: one arm of a comparison."""
        if not self.model_args:
            return self.model
        return f"{self.model} ({', '.join(f'{k}={v}' for k, v in self.model_args)})"

    @property
    def model_label(self) -> str:
        """The arm, and the generation seed where one was set: one log's row."""
        return self.arm_label + (f" [seed {self.replicate}]" if self.replicate else "")

    def fields(self) -> dict[str, str]:
        """Every field that tells two comparable groups apart, by a readable name."""
        out = {f"task_args.{k}": v for k, v in self.task_args}
        out.update(self.experiment)
        out["data"] = f"{self.n_ids} samples #{self.sample_hash}"
        return out

    def args_text(self) -> str:
        """The task arguments as `k=v, ...` (empty when there are none)."""
        return ", ".join(f"{k}={v}" for k, v in self.task_args)


@dataclass(frozen=True)
class SampleScore:
    """One sample and epoch of a log, as every reader sees it."""

    id: str  # sample id
    epoch: int  # 1-based epoch
    raw: tuple[tuple[str, Any], ...]  # (scorer, score value as logged), in the log's order
    error: str  # why the sample errored ("" when it did not)
    metadata: dict[str, Any]  # the sample's metadata (the summaries' thinned copy)
    usage: dict[str, Any]  # model_usage: tokens by model
    flags: int = 0  # integrity flags its scores carry (score metadata `integrity_flags`)
    working_time: float = math.nan  # seconds the sample worked (inspect's working_time)
    total_time: float = math.nan  # seconds from its start to its end, waits included


def _flag_count(scores: Any) -> int:
    """How many integrity flags a sample's scores carry (SWE scoring flags tampering)."""
    count = 0
    for score in (scores or {}).values():
        flags = ((score or {}).get("metadata") or {}).get("integrity_flags")
        count += len(flags) if isinstance(flags, list | tuple) else int(bool(flags))
    return count


@dataclass(frozen=True)
class LogRecord:
    """One finished log: its identity, header fields and samples."""

    path: str  # the log file
    identity: LogIdentity  # what it measured
    created: str  # when the eval was created (ISO time)
    metadata: dict[str, Any]  # the eval's metadata (harness_suite, harness_methods, preset...)
    samples: tuple[SampleScore, ...]  # one per sample and epoch
    stopping: dict[str, Any] = field(default_factory=dict)  # early-stopping metadata (decisions)
    # the log's current metadata: the eval's, with the edits made after the run (inspect's
    # `edit_eval_log`), where the manifest's outputs hash is written; never in the identity
    current_metadata: dict[str, Any] = field(default_factory=dict)
    # the suite's declared design, attached once where the log is read (`read_log`); every
    # consumer reads unit, cluster, support, direction and error rule from here
    design: Design = Design()
    # why its outputs or scores do not match its own manifest's digests ("" when they do, or
    # when it has none: `harness.log_integrity`); shown beside its score
    tampered: str = ""

    @property
    def sequential(self) -> dict[str, Any]:
        """The settings of `--until decided` when the run stopped on its decisions, else {}.

        Another's log is hostile: settings of the wrong form (alpha outside (0, 1), orders not
        lists of ids) read as {}, so the log is reported like any other, not a traceback.
        """
        value = self.metadata.get("harness_sequential")
        if not isinstance(value, dict):
            return {}
        alpha, orders = value.get("alpha"), value.get("orders")
        if not (isinstance(alpha, int | float) and 0 < alpha < 1 and isinstance(orders, dict)):
            return {}
        if not all(isinstance(o, list) and all(isinstance(i, str) for i in o)
                   for o in orders.values()):  # fmt: skip
            return {}
        return value

    @property
    def suite(self) -> str:
        """The harness suite."""
        return self.identity.suite

    @property
    def task(self) -> str:
        """The task name."""
        return self.identity.task

    @property
    def model(self) -> str:
        """The model as tables show it (spec and arguments)."""
        return self.identity.model_label

    @property
    def scorers(self) -> tuple[str, ...]:
        """The scorers' names, in the log's order."""
        names: dict[str, None] = {}
        for s in self.samples:
            names.update(dict.fromkeys(name for name, _ in s.raw))
        return tuple(names)


@dataclass(frozen=True)
class BadLog:
    """A log that is not used, and why."""

    path: str  # the log file
    reason: str  # one line


@dataclass(frozen=True)
class Selection:
    """The logs under some folders: those used, and the others with their reasons."""

    used: tuple[LogRecord, ...]  # newest finished log of each identity, sorted
    left_out: tuple[BadLog, ...]  # unreadable, unfinished or superseded, sorted by path


def parse_score(value: Any) -> tuple[float, str]:
    """A logged score value as (float, ""), or (0.0, reason) when it cannot be read as one.

    C/I/P/N letters, booleans, numbers and numeric strings are read; a calibrated judge's
    `{"judge", "human"}` verdict reads as its `judge`. None, NaN and any other string are
    unscored: 0.0 with the reason, which callers count as an error.
    """
    if isinstance(value, dict):
        if "judge" in value and (verdict := judge_verdict({"human": -1, **value})) is not None:
            return float(verdict["judge"]), ""
        return 0.0, f"unparseable score {json.dumps(value, default=str)[:60]}"
    if isinstance(value, str):
        if value in LETTER_SCORES:
            return LETTER_SCORES[value], ""
        if value.startswith("{") and '"judge"' in value:
            try:
                return parse_score(json.loads(value))
            except (json.JSONDecodeError, RecursionError):
                return 0.0, f"unparseable score {value[:60]!r}"
        try:
            number = float(value)
        except ValueError:
            return 0.0, f"unparseable score {value[:60]!r}"
        return _score_in_range(number, value[:60])
    if value is None:
        return 0.0, "unscored (no value)"
    if isinstance(value, bool | int | float):
        return _score_in_range(float(value) if isinstance(value, bool) else value, value)
    return 0.0, f"unparseable score of type {type(value).__name__}"


def _score_in_range(number: float | int, shown: Any) -> tuple[float, str]:
    """A score that is a number within +-MAX_SCORE, else unscored with the reason.

    A log is someone else's file: a score of 1e308 is finite, but sums and squares of such
    scores overflow every estimator, so it is refused as NaN is (`harness.outside_numbers`).
    """
    checked = check_number(number, low=-MAX_SCORE, high=MAX_SCORE)
    if checked.value is not None:
        return float(checked.value), ""
    if isinstance(number, float) and not math.isfinite(number):
        return 0.0, f"unscored ({shown})"
    return 0.0, f"unscored ({checked.reason})"


# The sample metadata key that holds a labelled sample's human label, written by the calibrated
# judge before the judge is asked: a sample whose judge raises has no verdict, but its label
# still keeps it out of the test set (`harness.compare._scores.judge_scores`).
HUMAN_LABEL_KEY = "harness_judge_human"


def judge_verdict(value: Any) -> dict[str, int] | None:
    """A calibrated judge's `{"judge", "human"}` verdict, else None."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    if isinstance(value, dict) and "judge" in value and "human" in value:
        judge, human = value["judge"], value["human"]
        numbers = not isinstance(judge, str) and not isinstance(human, str)
        if numbers and judge in (0, 1) and human in (-1, 0, 1):
            return {"judge": int(judge), "human": int(human)}
    return None


# Names of arguments whose values are secrets, matched whole or as a `_`/`-` separated part
# (`api_key`, `openai-api-key`, `auth_token`), never as a substring: `max_tokens`,
# `judge_max_tokens` and `author` are not secrets.
SECRET_PARTS = frozenset(
    {"key", "apikey", "secret", "password", "passwd", "pwd", "token", "credential",
     "credentials", "auth", "bearer", "cookie", "session", "signature"}
)  # fmt: skip
SECRET_NAMES = frozenset({"authorization", "private_key", "client_secret", "hf_token"})
# Values that are secrets whatever their name: provider key prefixes and bearer headers.
SECRET_VALUE = re.compile(
    r"^(?:sk-[A-Za-z0-9_-]{8,}|sk-ant-[A-Za-z0-9_-]{8,}|hf_[A-Za-z0-9]{16,}|"
    r"(?:Bearer|Basic) \S{8,}|AIza[0-9A-Za-z_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,})"
)


def is_secret_name(name: str) -> bool:
    """Whether an argument called `name` holds a secret (see `SECRET_PARTS`)."""
    lowered = name.lower()
    if lowered in SECRET_NAMES:
        return True
    return any(part in SECRET_PARTS for part in re.split(r"[_\-.\s]+", lowered))


def redact(name: str, value: Any) -> str:
    """`value` as JSON, or `<redacted #abc123>` when its name or its form says it is a secret.

    The hash keeps two runs with different keys apart without printing the key.
    """
    text = json.dumps(value, sort_keys=True, default=str)
    secret = is_secret_name(name) or (isinstance(value, str) and SECRET_VALUE.match(value))
    if secret and value not in (None, ""):
        return "<redacted #" + hashlib.sha256(text.encode()).hexdigest()[:6] + ">"
    return text


def _canonical(args: dict[str, Any] | None, drop: frozenset[str]) -> tuple[tuple[str, str], ...]:
    """Sorted (name, JSON value) pairs, secrets redacted (`redact`)."""
    return tuple((k, redact(k, v)) for k, v in sorted((args or {}).items()) if k not in drop)


def _without_ids(value: Any) -> Any:
    """A sample's input with the per-message `id`s inspect makes up at each run left out."""
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k != "id"}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


def data_hash(
    summaries: Iterable[dict[str, Any]], ids: Iterable[str], digits: int = 12
) -> tuple[str, int]:
    """`digits` hex digits of the SHA-256 of the samples' ids, inputs, choices and targets.

    The ids listed in the header are the samples run; the summaries give their content (one
    epoch each). Two data sets with the same ids and other content hash apart. The identity
    keeps 12 digits; the manifest (`harness.eval._manifest`) keeps all 64.
    """
    content: dict[str, str] = {}
    for s in summaries:
        sid = str(s.get("id"))
        if sid not in content:
            fields = [_without_ids(s.get(k)) for k in ("input", "choices", "target")]
            content[sid] = json.dumps(fields, sort_keys=True, default=str)
    sample_ids = sorted({str(i) for i in ids} | set(content))
    digest = hashlib.sha256()
    for sid in sample_ids:
        digest.update(json.dumps([sid, content.get(sid, "")]).encode() + b"\n")
    return digest.hexdigest()[:digits], len(sample_ids)


def default_design(suite: str) -> Design:
    """The default design, for every suite: what a log is read with when no lookup is given.

    The catalog's lookup is `harness.suites.catalog.catalog_design`; the report, the board, the
    leaderboard and `harness eval` pass it to `read_log`/`read_logs` as `designs`.
    """
    return Design()


# the task (or eval) metadata key that names a log's suite; spelled here only
SUITE_KEY = "harness_suite"


def suite_name(spec: dict[str, Any]) -> str:
    """The harness suite a log's `eval` header names (its task's name when it names none)."""
    meta = spec.get("metadata") or {}
    task = str(spec["task"]).split("/")[-1]
    return str((meta.get(SUITE_KEY) if isinstance(meta, dict) else None) or task)


def _redacted(value: Any) -> Any:
    """A value with every secret in it (by its key's name or its form) redacted, at any depth."""
    if isinstance(value, dict):
        return {str(k): (redact(str(k), v) if is_secret_name(str(k)) and v not in (None, "")
                         else _redacted(v)) for k, v in value.items()}  # fmt: skip
    if isinstance(value, list | tuple):
        return [_redacted(v) for v in value]
    if isinstance(value, str) and SECRET_VALUE.match(value):
        return redact("value", value)
    return value


def _entries(name: str, value: Any) -> list[tuple[str, str]]:
    """One spec field as (name, JSON) pairs: a dict one pair per key; empty values none."""
    if value is None or value == {} or value == []:
        return []
    if isinstance(value, dict):
        return [(f"{name}.{k}", json.dumps(_redacted(v), sort_keys=True, default=str))
                for k, v in sorted(value.items()) if v is not None]  # fmt: skip
    return [(name, json.dumps(_redacted(value), sort_keys=True, default=str))]


def _experiment(
    spec: dict[str, Any], settings: frozenset[str] = frozenset()
) -> tuple[tuple[str, str], ...]:
    """Every field of the spec beyond the task, its arguments and the model, as (name, JSON).

    The whole spec less `SPEC_SETTINGS`, less the config's and generate config's settings, and
    less `settings` (the design's), named whole (`config.max_samples`) or by their last part.
    """
    out: list[tuple[str, str]] = []
    config = dict(spec.get("config") or {})
    config["epochs"] = config.get("epochs") or 1
    for key, value in sorted(config.items()):
        if key not in CONFIG_SETTINGS:
            out += _entries(f"config.{key}", value)
    generate = spec.get("model_generate_config") or {}
    for key, value in sorted(generate.items()):
        if key not in GENERATE_SETTINGS and key != REPLICATE_FIELD:
            out += _entries(f"generate.{key}", value)
    dataset = spec.get("dataset") or {}
    for key, value in sorted(dataset.items()):
        if key not in DATASET_SETTINGS and value not in (None, False):
            out += _entries(f"dataset.{key}", value)
    scorers = [
        {"name": s.get("name"), "options": s.get("options") or {}}
        for s in spec.get("scorers") or []
        if isinstance(s, dict)
    ]
    if scorers:
        out.append(("scorers", json.dumps(_redacted(scorers), sort_keys=True, default=str)))
    for key, value in sorted(spec.items()):
        if key in SPEC_SETTINGS or key in SPEC_READ:
            continue
        if key == "task_version" and value in (0, "0"):
            continue
        out += _entries(key, value)
    return tuple(sorted((k, v) for k, v in out
                        if k not in settings and k.rsplit(".", 1)[-1] not in settings))  # fmt: skip


def _model_args(spec: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The model's arguments, with its base URL where one was given: one arm of a comparison."""
    args = _canonical(spec.get("model_args"), frozenset())
    if spec.get("model_base_url"):
        url = ("model_base_url", redact("model_base_url", spec["model_base_url"]))
        args = tuple(sorted((*args, url)))
    return args


def _stopping_metadata(header: dict[str, Any]) -> dict[str, Any]:
    """The early-stopping manager's metadata (a `--until decided` run's decisions), or {}."""
    stopping = (header.get("results") or {}).get("early_stopping") or {}
    meta = stopping.get("metadata") if isinstance(stopping, dict) else None
    return meta if isinstance(meta, dict) else {}


def identity_of(
    spec: dict[str, Any],
    ids: Iterable[str],
    summaries: Iterable[dict[str, Any]] = (),
    design: Design | None = None,
) -> LogIdentity:
    """The identity of a log from its `eval` header, its sample ids and its summaries.

    The task arguments leave out the settings `design` declares (the default design's if None).
    """
    meta = spec.get("metadata") or {}
    task = str(spec["task"]).split("/")[-1]
    suite = suite_name(spec)
    design = design if design is not None else Design()
    listed = (spec.get("dataset") or {}).get("sample_ids")
    digest, n_ids = data_hash(summaries, listed if listed else ids)
    recorded = (meta.get("harness_data_hash") or {}) if isinstance(meta, dict) else {}
    mine = recorded.get(task) if isinstance(recorded, dict) else None
    if isinstance(mine, str):
        # a run that stopped on its decisions: each model's log holds other items, so the
        # content hash is the one made of the whole dataset before the run
        digest = mine
    seed = (spec.get("model_generate_config") or {}).get(REPLICATE_FIELD)
    experiment = _experiment(spec, design.settings)
    sequential = meta.get("harness_sequential")
    if isinstance(sequential, dict):
        settings = {k: v for k, v in sequential.items() if k not in ("orders", "method")}
        entry = ("sequential", json.dumps(settings, sort_keys=True))
        experiment = tuple(sorted((*experiment, entry)))
    return LogIdentity(
        suite=suite,
        task=task,
        task_args=_canonical(spec.get("task_args"), design.settings),
        sample_hash=digest,
        n_ids=n_ids,
        model=str(spec["model"]),
        model_args=_model_args(spec),
        experiment=experiment,
        replicate="" if seed is None else json.dumps(seed),
    )


def _read_fast(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header and sample summaries of a finished `.eval` zip, parsed as plain JSON.

    About 10x faster than building inspect's pydantic models, which keeps a 50-log leaderboard
    build within seconds. Its members are zstd-compressed: `zipfile_zstd` (declared in
    pyproject.toml for Pythons before 3.14, whose zipfile reads zstd itself) registers that.
    """
    import sys
    import zipfile

    if sys.version_info < (3, 14):
        import zipfile_zstd  # noqa: F401

    with zipfile.ZipFile(path) as z:
        header = _bounded_member(z, "header.json", path)
        if not isinstance(header, dict) or header.get("status") != "success":
            return header, []
        return header, _bounded_member(z, "summaries.json", path)


# The most a member may hold once inflated, whatever it compressed from: a header is a few KB;
# summaries and samples grow with the run. Below these, `harness.bounded_zip.member_limit`
# bounds each member by its compressed size, so that a bomb stops at 16 MB.
_MEMBER_LIMITS = {"header.json": 64 << 20, "summaries.json": 1 << 30}
_SAMPLE_LIMIT = 256 << 20


def _bounded_member(z: Any, name: str, path: str) -> Any:
    """One JSON member of a zip, inflated in bounded chunks, its depth checked before parsing."""
    from harness.bounded_json import loads
    from harness.bounded_zip import ZipBombError, read_member

    try:
        data = read_member(path, z, name, _MEMBER_LIMITS.get(name, _SAMPLE_LIMIT))
    except ZipBombError as ex:
        raise UnreadableLog(str(ex)) from None
    return loads(data, f"{path}: {name}")


def _check_zip(path: str) -> None:
    """Every member of an `.eval` zip inflated within its bound before inspect's reader reads it.

    Raises:
        UnreadableLog: a member is a bomb or damaged.

    """
    from harness.bounded_zip import ZipBombError, check_members

    try:
        check_members(path, max(_MEMBER_LIMITS["summaries.json"], _SAMPLE_LIMIT))
    except ZipBombError as ex:
        raise UnreadableLog(str(ex)) from None


class UnreadableLog(ValueError):
    """A log the reader refuses before parsing: too big, too deep, or not a regular file."""


def _precheck_json_log(path: str) -> None:
    """A `.json` log's size and nesting depth, checked before inspect's reader parses it."""
    from harness.bounded_json import JsonInputError, depth, read_bytes

    try:
        found = depth(read_bytes(path))
    except JsonInputError as ex:
        raise UnreadableLog(str(ex).removeprefix(f"{path}: ")) from None
    if found > _LOG_MAX_DEPTH:
        raise UnreadableLog(f"JSON nested {found} deep, over the limit of {_LOG_MAX_DEPTH}")


_LOG_MAX_DEPTH = 256  # inspect's logs nest about 20 deep


def _read_inspect(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The same through inspect's reader: `.json` logs, and `.eval` logs of other layouts."""
    from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries

    header = read_eval_log(path, header_only=True).model_dump(mode="json", exclude={"samples"})
    if header.get("status") != "success":
        return header, []
    return header, [s.model_dump(mode="json") for s in read_eval_log_sample_summaries(path)]


def _read_header_and_summaries(path: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    import zipfile

    from harness.bounded_json import JsonInputError

    if path.endswith(".eval") and "://" not in path:  # a remote log (s3://...): inspect's reader
        try:
            return _read_fast(path)
        except JsonInputError as ex:  # too deep or not UTF-8: inspect's reader would be worse
            raise UnreadableLog(str(ex).removeprefix(f"{path}: ")) from None
        except (KeyError, zipfile.BadZipFile, NotImplementedError):
            pass  # another layout or a damaged zip: inspect's reader decides, with its reason
        with contextlib.suppress(zipfile.BadZipFile):  # not a zip: inspect's reader says so
            _check_zip(path)
    elif "://" not in path:
        _precheck_json_log(path)
    return _read_inspect(path)


def _error_text(error: Any) -> str:
    if not error:
        return ""
    message = error.get("message", "") if isinstance(error, dict) else str(error)
    return (message or "error").splitlines()[0][:160] if message else "error"


def _seconds(value: Any) -> float:
    """A sample's time in seconds; nan where the log has none, or not a time to MAX_SECONDS."""
    checked = check_number(value, low=0.0, high=MAX_SECONDS)
    return float(checked.value) if checked.value is not None else math.nan


def _current_metadata(header: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """The log's metadata with its post-run edits (inspect's `log_updates`), else the eval's."""
    current = header.get("metadata")
    if isinstance(current, dict) and current:
        return current
    meta = spec.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _object(value: Any, what: str) -> dict[str, Any]:
    """`value` where it is an object (null reads as {}); a ValueError naming `what` if not."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{what} is {type(value).__name__}, not an object")
    return value


def _sample_members(path: str) -> Iterator[dict[str, Any]]:
    """The whole samples of an `.eval` zip, one member at a time, each and all bounded.

    Raises:
        UnreadableLog: a member is a bomb, too deep or not JSON, or all of them inflate past
            `max(TOTAL_FLOOR, MAX_RATIO * file size)` (`harness.bounded_zip`).

    """
    import zipfile

    from harness.bounded_json import JsonInputError
    from harness.bounded_zip import MAX_RATIO, TOTAL_FLOOR

    budget = max(TOTAL_FLOOR, MAX_RATIO * Path(path).stat().st_size)
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            name = info.filename
            if not (name.startswith("samples/") and name.endswith(".json")):
                continue
            budget -= info.file_size
            if budget < 0:
                raise UnreadableLog("its samples inflate to more than its bound")
            try:
                sample = _bounded_member(z, name, path)
            except JsonInputError as ex:
                raise UnreadableLog(str(ex).removeprefix(f"{path}: ")) from None
            if not isinstance(sample, dict):
                raise UnreadableLog(f"{name} is {type(sample).__name__}, not an object")
            yield sample


def _tampered(path: str, current: dict[str, Any], summaries: list[dict[str, Any]]) -> str:
    """Why the log's outputs or scores do not match its manifest's digests ("" if they do).

    Only an `.eval` zip whose manifest holds per-sample digests is checked; its samples are
    read one at a time (`_sample_members`). A sample that cannot be read is a mismatch too.
    """
    outputs = current.get(OUTPUTS_KEY)
    if not (isinstance(outputs, dict) and outputs.get("per_sample")):
        return ""
    if not path.endswith(".eval") or "://" in path:
        return ""
    try:
        return tamper_reason(outputs, summaries, _sample_members(path))
    except (UnreadableLog, KeyError, OSError) as ex:
        return f"its samples cannot be checked against its manifest ({ex})"


def read_log(path: str, designs: DesignLookup = default_design) -> LogRecord | BadLog:
    """One log as a `LogRecord` with its suite's design attached, or a `BadLog` saying why not.

    Args:
        path: The log file.
        designs: Gives a suite's design by name (the catalog's: `catalog_design` in
            `harness.suites.catalog`); the default design for every suite if not given.

    """
    if "://" not in path and not Path(path).is_file():  # a FIFO would block the reader
        return BadLog(path, "not a regular file")
    try:
        header, summaries = _read_header_and_summaries(path)
    except UnreadableLog as ex:
        return BadLog(path, f"unreadable: {ex}")
    except Exception as ex:  # a truncated zip, invalid JSON, a foreign file: listed, not raised
        return BadLog(path, f"unreadable: {type(ex).__name__}: {str(ex)[:160]}")
    if not isinstance(header, dict):
        return BadLog(path, f"malformed log: its header is {type(header).__name__}, not an object")
    status = header.get("status")
    if status != "success":
        error = _error_text(header.get("error"))
        detail = f": {error}" if error else ""
        what = {"started": "unfinished (still running or half-written)"}.get(status, status)
        return BadLog(path, f"{what}{detail}")
    try:
        if not isinstance(summaries, list) or not all(isinstance(s, dict) for s in summaries):
            raise ValueError("its summaries are not a list of objects")
        samples = tuple(
            SampleScore(
                id=str(s["id"]),
                epoch=int(s.get("epoch") or 1),
                raw=tuple(
                    (name, (score or {}).get("value"))
                    for name, score in (s.get("scores") or {}).items()
                ),
                error=_error_text(s.get("error")),
                metadata=_object(s.get("metadata"), "a sample's metadata"),
                usage=_object(s.get("model_usage"), "a sample's model_usage"),
                flags=_flag_count(s.get("scores")),
                working_time=_seconds(s.get("working_time")),
                total_time=_seconds(s.get("total_time")),
            )
            for s in summaries
        )
        if not samples:
            return BadLog(path, "no samples")
        spec = _object(header["eval"], "its eval header")
        metadata = _object(spec.get("metadata"), "the eval's metadata")
        current = _current_metadata(header, spec)
        if problem := manifest_problem(metadata, current):
            return BadLog(path, f"malformed manifest: {problem}")
        design = designs(suite_name(spec))
        return LogRecord(
            path=path,
            identity=identity_of(spec, (s.id for s in samples), summaries, design),
            created=str(spec.get("created", "")),
            metadata=metadata,
            samples=samples,
            stopping=_stopping_metadata(header),
            current_metadata=current,
            design=design,
            tampered=_tampered(path, current, summaries),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as ex:
        return BadLog(path, f"malformed log: {type(ex).__name__}: {str(ex)[:160]}")


def log_files(dirs: Iterable[str]) -> list[str]:
    """Every log file under the folders (.eval, and .json other than known non-logs), sorted.

    A file named in `dirs` is taken as a log itself.

    Files are listed by name, not opened, so that an unreadable log is reported by `read_log`
    with its reason instead of skipped; what the harness wrote there is not a log (a
    `report.json`, whose first bytes say so, and a leaderboard site with its viewer's copies).
    """
    from harness.output_paths import SITE_MARK, is_harness_report

    paths: set[str] = set()
    dirs = list(dirs)
    for d in dirs:
        if Path(d).is_file():  # a log named by itself
            paths.add(d)
            continue
        if not Path(d).is_dir():
            raise HarnessUsageError(f"log folder '{d}' does not exist")
        sites = {m.parent for m in Path(d).rglob(SITE_MARK)}  # a site's viewer copies logs
        for p in Path(d).rglob("*"):
            if "_journal" in p.parts or p.is_dir() or p.name in NOT_LOGS:
                continue
            if sites and any(parent in sites for parent in p.parents):
                continue
            if p.suffix == ".json" and is_harness_report(p):  # report.json beside its logs
                continue
            if p.suffix == ".eval" or (p.suffix == ".json" and p.parent.name != "assets"):
                paths.add(str(p))
    return sorted(paths)


def select_logs(results: Iterable[LogRecord | BadLog]) -> Selection:
    """The newest log of each identity; older ones of the same identity are superseded."""
    results = list(results)
    left_out = [r for r in results if isinstance(r, BadLog)]
    newest: dict[LogIdentity, LogRecord] = {}
    records = sorted((r for r in results if isinstance(r, LogRecord)), key=lambda r: r.created)
    for record in records:
        if record.identity in newest:
            old = newest[record.identity]
            left_out.append(BadLog(old.path, f"superseded by the newer {record.path}"))
        newest[record.identity] = record
    used = sorted(newest.values(), key=lambda r: (r.suite, r.task, r.identity.task_args, r.model))
    return Selection(tuple(used), tuple(sorted(left_out, key=lambda b: b.path)))


def read_logs(
    dirs: Iterable[str], threads: int = 4, designs: DesignLookup = default_design
) -> Selection:
    """Read every log under `dirs`, attach each one's design, and select the ones to use."""
    dirs = list(dirs)
    paths = log_files(dirs)
    if not paths:
        raise HarnessUsageError(f"no inspect logs under {', '.join(dirs)}; run `harness eval`")
    with ThreadPoolExecutor(max_workers=threads) as pool:  # zip reads release the GIL
        return select_logs(pool.map(lambda p: read_log(p, designs), paths))


def read_full_log(location: str) -> Any:
    """A whole log (inspect's `EvalLog`, samples included), or a usage error saying why not.

    Read in a worker thread: inspect's reader runs its own event loop, which must not share the
    caller's thread state with a later in-process eval (that corrupts the next eval's loop).
    """
    from inspect_ai.log import read_eval_log

    try:
        if location.endswith(".json") and "://" not in location:
            _precheck_json_log(location)
        elif location.endswith(".eval") and "://" not in location and Path(location).is_file():
            _check_zip(location)
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(read_eval_log, location).result()
    except Exception as ex:  # inspect raises many types for a file that is not a log
        reason = " ".join(str(ex).split())[:200] or type(ex).__name__
        raise HarnessUsageError(f"{location}: not a readable inspect log ({reason})") from None


def read_samples(location: str) -> list[Any]:
    """The whole samples of a log (inspect's `EvalSample`), for metadata the summaries thin."""
    return list(read_full_log(location).samples or [])


def load_training_runs(location: str, keys: Sequence[str]) -> list[dict[str, Any]]:
    """One dict per sample: `metadata.<key>` for each key, then the run's own fields.

    Reads the full metadata (a run's curves exceed what the summaries keep). A sample that
    errored, or finished without a run, is kept: its dict has the keys and `"error"` (the
    reason, one line) and no run fields, so that a report counts it (errors count as wrong).
    A finished run has no `"error"` key.
    """
    runs = []
    for sample in read_samples(location):
        meta = sample.metadata or {}
        head = {key: meta.get(key) for key in keys}
        run = meta.get("run")
        run = json.loads(run) if isinstance(run, str) else run
        if sample.error:
            reason = _error_text(getattr(sample.error, "message", None) or str(sample.error))
            runs.append({**head, "error": reason})
        elif not isinstance(run, dict):
            runs.append({**head, "error": "no run in the sample's metadata (unfinished)"})
        else:
            runs.append({**head, **run})
    return runs
