"""What `harness reproduce` will run, printed before it runs, and the consent it needs.

A log is someone else's file: its model, model arguments, task arguments and limits were
chosen by whoever wrote it. Before anything runs, `plan_of` reads them from the request made
of the log and says what the run will do: the provider, the endpoint it will call and which of
the user's keys go there, the paths the arguments name, the limits, and a time estimate where
an argument implies one. `Plan.refusals` names what needs the user's consent:

- an endpoint the log names (the eval's `model_base_url`, an argument whose value is an
  `http(s)://` or `ws(s)://` URL, or one whose name says it is an endpoint: `base_url`,
  `api_base`, `endpoint`, `host`, ...) that the user did not name: not in `--allow-endpoint`
  and not the value of one of the user's own `*_BASE_URL` environment variables. Every such
  endpoint is refused, key or not: it would receive the data's prompts, and the user's key
  where the provider reads one (`OPENAI_API_KEY` for `openai/`);
- a path an argument names (a value that starts with `/`, `~`, `./`, `../` or `file:`, one
  that exists, or one whose argument's name says it is a path: `trace`, `*_file`, ...)
  outside the new log folder, unless `--allow-path` names it. Whether the run reads or writes
  it cannot be told from the log (scripted's `trace` appends to its file);
- a run that the arguments make longer than `max_wait` seconds (a `delay` per call times the
  calls, over the calls made at once), unless `--max-wait` raises it.

The data folder (`data_dir`) and a `local/PATH` or `replay/PATH` model are read, and shown.
Every value is shown through `harness.terminal.printable`: a log's text reaches the terminal
inert.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessUsageError
from harness.eval._request import EvalRequest
from harness.terminal import printable

MAX_DEPTH = 32  # levels of lists and dicts inside an argument walked for endpoints and paths
MAX_WAIT = 600.0  # seconds a log's delays may make the run take before --max-wait is needed
ENDPOINT_NAMES = frozenset({"base_url", "api_base", "endpoint", "url", "host", "server",
                            "azure_endpoint", "api_url", "model_base_url"})  # fmt: skip
PATH_NAMES = frozenset({"trace", "path", "file", "dir", "folder", "out", "output", "outputs",
                        "log", "logs", "cache", "checkpoint", "ckpt"})  # fmt: skip
PATH_SUFFIXES = ("_path", "_file", "_dir", "_folder", "_checkpoint")
DELAY_NAMES = frozenset({"delay", "sleep", "wait"})
CONNECTION_NAMES = ("connections", "max_connections")
_URL = re.compile(r"^(https?|wss?)://", re.IGNORECASE)
_PATH_PROVIDERS = ("local", "replay")  # providers whose model name is a path they read


@dataclass(frozen=True)
class Consent:
    """What the user named on the command line: the only things a log's run may use."""

    endpoints: tuple[str, ...] = ()  # --allow-endpoint URL, each exactly
    paths: tuple[str, ...] = ()  # --allow-path PATH, each a file or a folder
    max_wait: float = MAX_WAIT  # --max-wait SECONDS: the longest the log's delays may make it


@dataclass(frozen=True)
class Endpoint:
    """An endpoint the run will call."""

    where: str  # the argument that names it ("model_args.base_url", "model_base_url")
    url: str  # as the log gives it
    named: bool  # whether the user named it (--allow-endpoint or their own *_BASE_URL)


@dataclass(frozen=True)
class NamedPath:
    """A path an argument of the log names."""

    where: str  # "model_args.trace", "task_args.out", "data_dir", "model"
    path: str  # as the log gives it
    resolved: str  # absolute, links resolved
    inside: bool  # whether it lies inside the new log folder
    allowed: bool  # whether --allow-path names it (or a folder holding it)
    read_only: bool = False  # the data folder and a model's own path: read, never refused


@dataclass(frozen=True)
class Plan:
    """What the reproduction will run, and what it needs consent for."""

    model: str  # the model spec
    provider: str  # its first segment (the method wrapper, where there is one)
    keys: tuple[str, ...]  # the user's environment variables holding keys the provider reads
    endpoints: tuple[Endpoint, ...]  # every endpoint the log names
    default_endpoint: str  # what the provider calls when the log names none
    log_dir: str  # the new log folder
    paths: tuple[NamedPath, ...]  # every path an argument names
    samples: int | None  # samples per epoch (None: as many as the data holds)
    epochs: int  # epochs
    limits: tuple[tuple[str, str], ...]  # the log's limits that are set (name, value)
    seconds: float | None  # the least time the arguments' delays imply, where they imply one
    consent: Consent = field(default_factory=Consent)

    @property
    def refusals(self) -> tuple[str, ...]:
        """One reason per thing the user has not consented to (empty: it may run)."""
        out: list[str] = []
        for e in self.endpoints:
            if not e.named:
                keys = f" with your {', '.join('$' + k for k in self.keys)}" if self.keys else ""
                out.append(
                    f"the log's {e.where} sends the data's prompts{keys} to {_show(e.url)}, an "
                    f"endpoint you did not name: give --allow-endpoint {_show(e.url)} if you "
                    "trust it"
                )
        for p in self.paths:
            if not (p.read_only or p.inside or p.allowed):
                out.append(
                    f"the log's {p.where} names {_show(p.path)} ({_show(p.resolved)}), outside "
                    f"the new log folder {_show(self.log_dir)}: the run may write there; give "
                    f"--allow-path {_show(p.resolved)} if it may"
                )
        if self.seconds is not None and self.seconds > self.consent.max_wait:
            out.append(
                f"the log's delays make the run take at least {self.seconds:,.0f} s, more "
                f"than --max-wait {self.consent.max_wait:,.0f} s: give --max-wait "
                f"{math.ceil(self.seconds)} to wait that long"
            )
        return tuple(out)

    def lines(self) -> list[str]:
        """The plan as it is printed, one thing per line."""
        keys = ", ".join("$" + k for k in self.keys) if self.keys else "none set"
        out = ["plan (read from the log; nothing has run yet):",
               f"  model     {_show(self.model)} (provider {_show(self.provider)})",
               f"  keys      {keys}"]  # fmt: skip
        if not self.endpoints:
            out.append(f"  endpoint  {self.default_endpoint}")
        for e in self.endpoints:
            mark = "named by you" if e.named else "NOT named by you"
            out.append(f"  endpoint  {_show(e.url)} (from {e.where}; {mark})")
        out.append(f"  writes    {_show(self.log_dir)} (the new log folder)")
        for p in self.paths:
            if p.read_only:
                state = "read"
            elif p.inside:
                state = "inside the new log folder"
            else:
                state = "allowed by you" if p.allowed else "OUTSIDE the new log folder"
            out.append(f"  path      {p.where} = {_show(p.path)} ({state})")
        samples = "all" if self.samples is None else str(self.samples)
        limits = ", ".join(f"{k} {v}" for k, v in self.limits)
        out.append(f"  limits    samples {samples}, epochs {self.epochs}"
                   + (f", {limits}" if limits else ""))  # fmt: skip
        if self.seconds is not None:
            out.append(f"  time      at least {self.seconds:,.0f} s (the log's delays)")
        return out


def _show(text: object) -> str:
    return printable(str(text), markup=False)


def _is_endpoint(name: str, value: Any) -> bool:
    if not isinstance(value, str) or not value.strip():
        return False
    return bool(_URL.match(value.strip())) or name.lower() in ENDPOINT_NAMES


def _is_path(name: str, value: Any) -> bool:
    if not isinstance(value, str) or not value or _URL.match(value.strip()):
        return False
    lowered = name.lower()
    if lowered in PATH_NAMES or lowered.endswith(PATH_SUFFIXES):
        return True
    if value.startswith(("/", "~", "./", "../", "file:")):
        return True
    try:
        return Path(value).exists()
    except (OSError, ValueError):  # too long, or a NUL: text, not a path
        return False


def _leaves(
    where: str, value: Any, key: str = "", depth: int = 0
) -> Iterator[tuple[str, str, Any]]:
    """(where, name, value) of every value inside an argument: lists and dicts walked."""
    if depth > MAX_DEPTH:
        raise HarnessUsageError(f"the log's {_show(where)} nests deeper than {MAX_DEPTH} levels; "
                                "reproduce does not run what it cannot read whole")  # fmt: skip
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(f"{where}.{k}", v, str(k), depth + 1)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _leaves(where, v, key, depth + 1)
    else:
        yield where, key, value


def _url_key(url: str) -> str:
    return url.strip().rstrip("/").lower()


def _user_endpoints(consent: Consent, env: Mapping[str, str]) -> set[str]:
    """The endpoints the user named: on the command line, or in their own environment."""
    mine = {_url_key(u) for u in consent.endpoints}
    mine |= {_url_key(v) for k, v in env.items() if k.endswith(("_BASE_URL", "_ENDPOINT")) and v}
    return mine


def _resolved(value: str) -> Path:
    text = value[len("file://") :] if value.startswith("file://") else value
    text = text[len("file:") :] if text.startswith("file:") else text
    return Path(text).expanduser().resolve(strict=False)


def _within(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _named_path(where: str, value: str, log_dir: Path, consent: Consent,
                read_only: bool = False) -> NamedPath:  # fmt: skip
    try:
        resolved = _resolved(value)
    except (OSError, ValueError, RuntimeError):  # a NUL, a link loop: outside, not allowed
        return NamedPath(where, value, value, inside=False, allowed=False, read_only=read_only)
    allowed = any(_within(resolved, _resolved(p)) for p in consent.paths)
    return NamedPath(where, value, str(resolved), inside=_within(resolved, log_dir),
                     allowed=allowed, read_only=read_only)  # fmt: skip


def _keys(model: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """The user's key variables a provider in the model spec reads (`OPENAI_API_KEY`, ...)."""
    segments = [s.upper().replace("-", "_").replace(".", "_") for s in model.split("/")[:-1]]
    out = []
    for seg in segments:
        for suffix in ("_API_KEY", "_KEY", "_TOKEN", "_ACCESS_KEY_ID", "_SECRET_ACCESS_KEY"):
            name = seg + suffix
            if env.get(name) and name not in out:
                out.append(name)
    return tuple(out)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if number == number else math.inf  # NaN: read as "never answers"


def _seconds(args: Mapping[str, Any], calls: int, connections: int | None) -> float | None:
    """The least time the arguments' delays imply: delay x rounds of calls made at once."""
    delays = [n for k, v in args.items()
              if k.lower() in DELAY_NAMES or k.lower().endswith(("_delay", "_sleep"))
              if (n := _number(v)) is not None and n > 0]  # fmt: skip
    if not delays:
        return None
    at_once = max(1, min(connections or calls, calls))
    return max(delays) * math.ceil(calls / at_once)


def plan_of(req: EvalRequest, spec: Any, n_data: int | None, consent: Consent,
            env: Mapping[str, str] | None = None) -> Plan:  # fmt: skip
    """The plan of the `EvalRequest` made of a log whose `EvalSpec` is `spec`.

    Args:
        req: The request `harness.eval._reproduce.request_for` made of the log.
        spec: The log's `EvalSpec` (its limits are read from `spec.config`).
        n_data: The samples the log's data held, where known.
        consent: What the user named on the command line.
        env: The environment (default `os.environ`): the user's keys and `*_BASE_URL`s.

    """
    env = os.environ if env is None else env
    log_dir = _resolved(req.log_dir)
    model = str(req.models[0])
    provider, _, name = model.partition("/")
    mine = _user_endpoints(consent, env)
    endpoints: list[Endpoint] = []
    paths: list[NamedPath] = []
    arg_sets: Sequence[tuple[str, Mapping[str, Any]]] = (
        ("model_args", req.model_args or {}), ("task_args", req.task_args or {}))  # fmt: skip
    for kind, args in arg_sets:
        for where, key, v in _leaves(kind, args):
            if _is_endpoint(key, v):
                endpoints.append(Endpoint(where, v, _url_key(v) in mine))
            elif _is_path(key, v):
                paths.append(_named_path(where, v, log_dir, consent))
    if req.data_dir:
        paths.append(_named_path("data_dir", req.data_dir, log_dir, consent, read_only=True))
    if provider in _PATH_PROVIDERS and _is_path("", name):
        paths.append(_named_path("model", name, log_dir, consent, read_only=True))
    samples = req.limit if req.limit is not None else n_data
    if samples is not None and n_data is not None:
        samples = min(samples, n_data)
    calls = (samples or 1) * max(1, int(req.epochs or 1))
    connections = next((int(n) for k in CONNECTION_NAMES
                        if (n := _number((req.model_args or {}).get(k))) and math.isfinite(n)
                        and n >= 1), None)  # fmt: skip
    config = getattr(spec, "config", None)
    limits = tuple((k, str(v)) for k in ("time_limit", "working_limit", "message_limit",
                                          "token_limit", "cost_limit")
                   if (v := getattr(config, k, None)) is not None)  # fmt: skip
    base = [k for k in (f"{provider.upper().replace('-', '_')}_BASE_URL",) if env.get(k)]
    default = f"${base[0]} = {_show(env[base[0]])} (yours)" if base else "the provider's default"
    return Plan(
        model=model, provider=provider, keys=_keys(model, env), endpoints=tuple(endpoints),
        default_endpoint=default, log_dir=str(log_dir), paths=tuple(paths), samples=samples,
        epochs=int(req.epochs or 1), limits=limits,
        seconds=_seconds(req.model_args or {}, calls, connections), consent=consent,
    )  # fmt: skip
