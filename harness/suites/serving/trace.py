"""The Azure LLM inference traces (conversation and code), as slices of requests at a set load.

The CSV files (`TIMESTAMP,ContextTokens,GeneratedTokens`, from `Azure/AzurePublicDataset`,
CC-BY 4.0, Patel et al., Splitwise, ISCA 2024) load from the data folder that `--data-dir` or
`HARNESS_DATA_DIR` names (`harness.data.resolve_data_dir`), under `serving/`; every row is
validated and a bad row costs that row alone (`harness.data.LoadedRows`). There is no hub
copy: without a data folder the user is told where to get the files.

A slice is a window of the trace's own time. Its requests keep their order and relative gaps,
stretched or squeezed by one factor so that the slice's load is the one asked for:

    load = arrival rate / saturated throughput,

the saturated throughput being the rate at which the simulated server finishes the slice's
requests when all of them are queued at once (FCFS). That definition is ours: the spec asks
for load 0.6-0.9 and gives no formula.

Prefix-cache hits are drawn from the sample's seed: with probability `hit_rate` a request
finds `hit_fraction` of its prompt cached (at least one token uncached). Ours too.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.data import LoadedRows, RowError, resolve_data_dir
from harness.errors import HarnessUsageError
from harness.suites.serving.policies import Fcfs
from harness.suites.serving.simulator import Request, ServerConfig, simulate

TRACES: dict[str, str] = {
    "conv": "serving/AzureLLMInferenceTrace_conv.csv",
    "code": "serving/AzureLLMInferenceTrace_code.csv",
}
SOURCE = "https://github.com/Azure/AzurePublicDataset (data/AzureLLMInferenceTrace_{conv,code}.csv)"
MAX_BYTES = 64 * 1024 * 1024  # a trace file larger than this is refused (the real ones are < 1 MB)
COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
MAX_TOKENS = 1_000_000  # a token count above this is a bad row


@dataclass(frozen=True, slots=True)
class TraceRow:
    """One request of the trace: seconds since the trace's first row, and its token counts."""

    time: float
    prompt: int
    output: int


def _seconds(stamp: str) -> float:
    """`YYYY-MM-DD HH:MM:SS.fffffff` as seconds since 2000-01-01 (any day count works)."""
    day, _, clock = stamp.strip().partition(" ")
    y, mo, d = (int(x) for x in day.split("-"))
    h, mi, s = clock.split(":")
    if not (1 <= mo <= 12 and 1 <= d <= 31 and 0 <= int(h) < 24 and 0 <= int(mi) < 60):
        raise ValueError(f"not a timestamp: {stamp!r}")
    sec = float(s)
    if not 0 <= sec < 61:
        raise ValueError(f"not a timestamp: {stamp!r}")
    days = np.datetime64(f"{y:04d}-{mo:02d}-{d:02d}") - np.datetime64("2000-01-01")
    return int(days.astype(int)) * 86400.0 + int(h) * 3600.0 + int(mi) * 60.0 + sec


def _count(value: str) -> int:
    text = value.strip()
    if not text.isdigit():
        raise ValueError(f"must be a whole number, got {value!r}")
    number = int(text)
    if not 1 <= number <= MAX_TOKENS:
        raise ValueError(f"must be in [1, {MAX_TOKENS}], got {number}")
    return number


def trace_path(trace: str, data_dir: str | os.PathLike[str] | None) -> Path:
    """Where the trace's CSV lies in the data folder.

    Raises:
        HarnessUsageError: an unknown trace, no data folder, or the file missing.

    """
    if trace not in TRACES:
        raise HarnessUsageError(f"unknown trace '{trace}'; choose one of: {', '.join(TRACES)}")
    folder = resolve_data_dir(data_dir)
    if folder is None:
        raise HarnessUsageError(
            f"the serving traces load from a local folder (no hub copy): download them from "
            f"{SOURCE} into DIR/serving/ and pass --data-dir DIR or set HARNESS_DATA_DIR"
        )
    path = folder / TRACES[trace]
    if not path.is_file():
        raise HarnessUsageError(
            f"expected the {trace} trace at '{path}'; put {Path(TRACES[trace]).name} there "
            f"(from {SOURCE}) or point --data-dir at the folder that holds serving/"
        )
    return path


def load_trace(trace: str, data_dir: str | os.PathLike[str] | None = None) -> LoadedRows:
    """The trace's rows, validated; `rows` hold dicts with `time`, `prompt`, `output`.

    Raises:
        HarnessUsageError: as `trace_path`, a file too large or not text, or a wrong header.

    """
    path = trace_path(trace, data_dir)
    if path.stat().st_size > MAX_BYTES:
        raise HarnessUsageError(f"{path}: larger than {MAX_BYTES} bytes; is it the trace?")
    try:
        text = path.read_bytes().decode("ascii")
    except UnicodeDecodeError as ex:
        raise HarnessUsageError(f"{path}: not ASCII text (byte {ex.start}); fix the file") from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or tuple(h.strip() for h in header) != COLUMNS:
        raise HarnessUsageError(f"{path}: expected the header {','.join(COLUMNS)}, got {header}")
    rows: list[tuple[int, dict]] = []
    errors: list[RowError] = []
    for number, cells in enumerate(reader, start=1):
        if len(cells) != 3:
            errors.append(RowError(str(path), number, "*", f"has {len(cells)} fields, not 3"))
            continue
        clean: dict = {}
        for name, key, check in (
            ("TIMESTAMP", "time", _seconds),
            ("ContextTokens", "prompt", _count),
            ("GeneratedTokens", "output", _count),
        ):
            try:
                clean[key] = check(cells[COLUMNS.index(name)])
            except (ValueError, TypeError) as ex:
                errors.append(RowError(str(path), number, name, f"is invalid: {ex}"))
                break
        else:
            rows.append((number, clean))
    return LoadedRows(source=str(path), rows=tuple(rows), errors=tuple(errors))


def trace_rows(trace: str, data_dir: str | os.PathLike[str] | None = None) -> list[TraceRow]:
    """The trace in time order, seconds from its first request; a bad row stops with one line."""
    loaded = load_trace(trace, data_dir)
    loaded.raise_for_errors(" or point --data-dir at an unmodified copy of the trace")
    rows = sorted((r["time"], r["prompt"], r["output"]) for _, r in loaded.rows)
    if not rows:
        raise HarnessUsageError(f"{loaded.source}: no requests")
    t0 = rows[0][0]
    return [TraceRow(t - t0, p, o) for t, p, o in rows]


@dataclass(frozen=True, slots=True)
class Workload:
    """A slice's requests at the load asked for.

    Attributes:
        requests: In arrival order, arrivals from 0 (s, after scaling).
        scale: Arrival times are (trace time − slice start) / scale.
        saturated_rate: Requests per second the server finishes with all of them queued.
        load: The load reached: arrival rate / saturated rate.

    """

    requests: tuple[Request, ...]
    scale: float
    saturated_rate: float
    load: float


def slice_workload(
    rows: list[TraceRow],
    start: float,
    minutes: float,
    load: float,
    seed: int,
    server: ServerConfig,
    *,
    hit_rate: float = 0.25,
    hit_fraction: float = 0.5,
) -> Workload:
    """The requests of trace time [start, start + minutes·60), scaled to `load`.

    Raises:
        HarnessUsageError: a load outside (0, 1), cache settings outside [0, 1], or a slice
            with fewer than 2 requests.

    """
    if not 0 < load < 1:
        raise HarnessUsageError(f"load must be in (0, 1), got {load}")
    if not (0 <= hit_rate <= 1 and 0 <= hit_fraction <= 1):
        raise HarnessUsageError("hit_rate and hit_fraction must be in [0, 1]")
    end = start + minutes * 60.0
    picked = [r for r in rows if start <= r.time < end]
    if len(picked) < 2:
        raise HarnessUsageError(
            f"the slice [{start:.0f} s, {end:.0f} s) holds {len(picked)} requests; "
            f"use fewer or longer slices"
        )
    rng = np.random.default_rng([seed, 0xCA])
    hits = rng.random(len(picked)) < hit_rate
    base = []
    for i, (r, hit) in enumerate(zip(picked, hits, strict=True)):
        cached = min(int(hit_fraction * r.prompt), r.prompt - 1) if hit else 0
        prompt, output = r.prompt, r.output
        if prompt + output > server.kv_budget:  # cannot be served at all: cut its output
            output = max(1, server.kv_budget - prompt)
            prompt = min(prompt, server.kv_budget - output)
            cached = min(cached, prompt - 1)
        base.append(Request(i, r.time - picked[0].time, prompt, output, cached))
    queued = [Request(r.rid, 0.0, r.prompt, r.output, r.cached) for r in base]
    saturated = simulate(queued, Fcfs(), server)
    mu = len(base) / saturated.end
    span = base[-1].arrival
    if span <= 0:
        raise HarnessUsageError("the slice's requests all arrive at once; use a longer slice")
    lam_trace = (len(base) - 1) / span
    scale = load * mu / lam_trace
    requests = tuple(Request(r.rid, r.arrival / scale, r.prompt, r.output, r.cached) for r in base)
    return Workload(requests, scale, mu, (len(base) - 1) / (span / scale) / mu)
