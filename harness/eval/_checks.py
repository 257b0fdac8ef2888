"""Checks `harness eval` makes before inspect runs anything, each a one-line usage error.

- `check(request, suite)`: every setting of the request, `--until` and its companions included,
  checked once, before a task or a model is built.
- A model whose provider cannot start (no API key, a package missing, no network) is named
  with what is missing, instead of inspect's or the client library's traceback.
- The same model twice, or more samples x epochs than a run can hold in memory.
- A task whose arguments leave it no samples.
- An unreadable log in `--log-dir` (a crash can leave one) is set aside, renamed, with a
  message, so that resuming goes on; nothing is deleted.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessUsageError

if TYPE_CHECKING:
    from harness.eval._request import EvalRequest
    from harness.suites.catalog import Suite

MAX_SAMPLE_EPOCHS = 10_000_000  # samples x epochs of one task: inspect holds each in memory
_MARKUP = re.compile(r"\[/?(?:bold|blue|red|green|yellow|italic|dim)\]")
_ENV_NAME = re.compile(r"\b[A-Z][A-Z0-9_]*_(?:API_KEY|TOKEN|BASE_URL)\b")


def model_specs(request: EvalRequest, suite: Suite) -> tuple[str, ...]:
    """The models to run: those asked for, else the suite's default; none is a usage error."""
    specs = request.models or ((suite.default_model,) if suite.default_model else ())
    if not specs:
        raise HarnessUsageError(f"suite '{suite.name}' needs --model, for example local/tiny-arith")
    return specs


def check(request: EvalRequest, suite: Suite) -> None:
    """Every setting of `request` that `suite` cannot take, as one line; `--until` included."""
    _check_counts(request)
    specs = model_specs(request, suite)
    if request.until is None:
        if (request.budget is not None or request.order_seed or request.margin != 0.05
                or request.width is not None or request.active or request.history):  # fmt: skip
            raise HarnessUsageError(
                "--margin, --budget, --width, --order-seed, --active and --history go with "
                "--until decided"
            )
        return
    _check_until(request, len(specs))
    score = suite.design.score
    if score == "unbounded":
        raise HarnessUsageError(
            f"--until decided needs scores in [0, 1]; suite '{suite.name}' declares "
            "unbounded scores"
        )
    if suite.design.cluster and request.active:
        raise HarnessUsageError(
            f"--active chooses items one at a time, but this suite's items nest in clusters "
            f"({suite.design.cluster!r}), so its CSs would not hold; run --until decided "
            "without --active"
        )


def _check_counts(request: EvalRequest) -> None:
    """Epochs, limit, retries, timeouts and connections: each at least its smallest value."""
    if request.epochs < 1:
        raise HarnessUsageError(f"--epochs must be at least 1, got {request.epochs}")
    if request.limit is not None and request.limit < 1:
        raise HarnessUsageError(f"--limit must be at least 1, got {request.limit}")
    if request.max_retries is not None and request.max_retries < 0:
        raise HarnessUsageError(f"--max-retries must be at least 0, got {request.max_retries}")
    for flag, value in (
        ("--timeout", request.timeout),
        ("--attempt-timeout", request.attempt_timeout),
        ("--max-connections", request.max_connections),
    ):
        if value is not None and value < 1:
            raise HarnessUsageError(f"{flag} must be at least 1, got {value}")


def _check_until(request: EvalRequest, n_models: int) -> None:
    """One-line errors for settings `--until decided` cannot take."""
    from harness import registry

    if request.until not in registry.names("until"):
        raise HarnessUsageError(f"--until takes 'decided', got {request.until!r}")
    if not (math.isfinite(request.margin) and 0 <= request.margin < 1):
        raise HarnessUsageError(f"--margin must be in [0, 1), got {request.margin}")
    if request.budget is not None and request.budget < 1:
        raise HarnessUsageError(f"--budget must be at least 1 item, got {request.budget}")
    if request.epochs != 1:
        raise HarnessUsageError("--until decided runs one epoch per item; leave out --epochs")
    if request.active:
        if n_models != 1:
            raise HarnessUsageError("--active adds one model to a board with history; give one "
                                    f"--model (got {n_models})")  # fmt: skip
        if not request.history:
            raise HarnessUsageError("--active needs past logs of other models on this task: "
                                    "give --history LOGDIR")  # fmt: skip
    elif request.history:
        raise HarnessUsageError("--history goes with --active")
    width = request.width
    if width is not None and not (math.isfinite(width) and 0 < width <= 1):
        raise HarnessUsageError(f"--width must be in (0, 1], got {width}")
    if n_models < 2 and width is None and not request.active:
        raise HarnessUsageError(
            "--until decided with one model stops on its interval's width: give --width W, "
            "or two or more --model to compare"
        )
    if n_models >= 2 and width is not None:
        raise HarnessUsageError("--width is for one model; with several, pairs decide")


def one_line(text: str, limit: int = 300) -> str:
    """`text` without rich markup, its lines joined, cut at `limit` characters."""
    flat = " ".join(_MARKUP.sub("", text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def provider_start_error(spec: str, ex: BaseException) -> HarnessUsageError:
    """A one-line error for a provider that failed to start, naming the key, package or link."""
    message = one_line(str(ex)) or type(ex).__name__
    keys = list(dict.fromkeys(_ENV_NAME.findall(_MARKUP.sub("", str(ex)))))
    if keys:
        return HarnessUsageError(
            f"model '{spec}' cannot start: {keys[0]} is not set; export it (or pass "
            f"-M api_key=...) and run again"
        )
    install = re.search(r"pip install ([\w\-\[\]=.,<> ]+)", _MARKUP.sub("", str(ex)))
    if install or isinstance(ex, ImportError):
        package = install.group(1).strip() if install else getattr(ex, "name", None) or message
        return HarnessUsageError(
            f"model '{spec}' cannot start: its provider needs the package '{package}'; "
            f"pip install {package}"
        )
    if isinstance(ex, OSError) and re.search(r"connect|network|offline|resolve", message, re.I):
        return HarnessUsageError(
            f"model '{spec}' cannot start: no connection to fetch it ({message}); connect to "
            "the network, or use a local copy (local/PATH)"
        )
    return HarnessUsageError(f"model '{spec}' cannot start: {message}")


_TRUE = {"1", "on", "yes", "true"}
_PROXIES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def check_hub_reachable(spec: str, timeout: float = 3.0) -> None:
    """An `hf/NAME` model that is neither on disk nor in the cache needs the hub: reach it first.

    Offline, the hub client retried each file five times over about 90 seconds, printing two
    warnings a try, before the one-line error. Here one connection is tried (`timeout`
    seconds): where it fails, a model in the local cache is loaded offline (`HF_HUB_OFFLINE`),
    and one that is not is a one-line error at once. Offline mode already set, a proxy (the
    direct probe would say nothing about it) or a local folder skip the probe.
    """
    import os
    import socket
    from urllib.parse import urlparse

    name = spec.partition("/")[2]
    if Path(name).expanduser().exists() or any(
        os.environ.get(v, "").strip().lower() in _TRUE
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    ):
        return
    if any(os.environ.get(v) for v in _PROXIES):
        return
    endpoint = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
        return
    except OSError as ex:
        reason = one_line(ex.strerror or str(ex) or type(ex).__name__, 120)
    from huggingface_hub import constants, try_to_load_from_cache

    if isinstance(try_to_load_from_cache(name, "config.json"), str):
        os.environ["HF_HUB_OFFLINE"] = "1"  # load the cached copy without the retries
        constants.HF_HUB_OFFLINE = True
        return
    raise HarnessUsageError(
        f"model '{spec}' cannot start: {host} cannot be reached ({reason}) and '{name}' is not "
        "in the local Hugging Face cache; connect to the network, or use a local copy "
        "(hf/PATH or local/PATH)"
    )


def check_distinct(specs: tuple[str, ...]) -> None:
    """The same model spec twice is a mistake: inspect would refuse the second run."""
    seen: set[str] = set()
    for spec in specs:
        if spec in seen:
            raise HarnessUsageError(f"--model {spec} is given twice; give each model once")
        seen.add(spec)


def check_samples(tasks: list[Any], limit: int | None, epochs: int) -> None:
    """Each task has samples, and samples x epochs stays within `MAX_SAMPLE_EPOCHS`."""
    for task in tasks:
        size = len(task.dataset)
        if size == 0:
            raise HarnessUsageError(
                f"task '{task.name}' has no samples with these -T arguments; give it at least one"
            )
        n = min(size, limit) if limit else size
        if n * epochs > MAX_SAMPLE_EPOCHS:
            raise HarnessUsageError(
                f"task '{task.name}': {n} samples x --epochs {epochs} is over "
                f"{MAX_SAMPLE_EPOCHS:,} sample-epochs; lower --epochs or --limit"
            )


def set_aside_unreadable_logs(log_dir: str) -> list[Path]:
    """Rename each `.eval` in `log_dir` that no reader can open to `NAME.eval.unreadable`.

    inspect's resume reads every log in the folder and stops at the first it cannot read. A
    log that is only unfinished is kept: resume needs it. Returns the files set aside.
    """
    import zipfile

    from harness.logs import read_log

    moved = []
    for path in sorted(Path(log_dir).glob("*.eval")):
        if path.is_file():
            try:  # a zip that opens is left to inspect, which reads unfinished ones too
                with zipfile.ZipFile(path):
                    continue
            except (zipfile.BadZipFile, OSError, ValueError):
                pass
        result = read_log(str(path))
        reason = getattr(result, "reason", "")
        if not reason.startswith(("unreadable", "not a regular file")):
            continue
        target = path.with_name(path.name + ".unreadable")
        k = 1
        while target.exists():
            k += 1
            target = path.with_name(f"{path.name}.unreadable{k}")
        path.rename(target)
        moved.append(target)
        print(f"harness: set aside {path} as {target.name} ({reason})", file=sys.stderr)
    return moved


def check_model_needed(tasks: list[Any], specs: tuple[str, ...]) -> None:
    """A task whose metadata says `harness_needs_model` (why) is not run on `none/none`."""
    for task in tasks:
        why = (task.metadata or {}).get("harness_needs_model")
        if why and "none/none" in specs:
            raise HarnessUsageError(
                f"{why}, and the model is none/none; give one with --model, for example "
                "openai/gpt-4o-mini"
            )


def check_replay_ids(models: list[Any], tasks: list[Any], limit: int | None) -> None:
    """Recorded outputs against each task's sample ids, before anything runs.

    None matching in any task is a usage error showing the ids each side has; a partial match
    is said on stderr as a count (samples without an output will error and count as wrong).
    """
    for model in models:
        recorded = getattr(model.api, "recorded", None)
        if recorded is None:
            continue
        counts = []
        for task in tasks:
            ids = [str(s.id) for s in list(task.dataset)[:limit]]
            counts.append((task.name, ids, sum(1 for i in ids if i in recorded.by_id)))
        if not any(found for _, _, found in counts):
            theirs = ", ".join(list(recorded.by_id)[:3])
            ours = "; ".join(f"'{name}': {', '.join(ids[:3])}" for name, ids, _ in counts)
            raise HarnessUsageError(
                f"{recorded.source}: none of its ids ({theirs}, ...) is a sample id of the "
                f'suite\'s tasks, whose ids are like {ours}; write those in the "id" field'
            )
        for name, ids, found in counts:
            if found < len(ids):
                print(
                    f"harness: {recorded.source}: {found} of {len(ids)} samples of '{name}' "
                    f"have an output; the other {len(ids) - found} will error",
                    file=sys.stderr,
                )
