"""Checks `harness eval` makes before inspect runs anything, each a one-line usage error.

- A model whose provider cannot start (no API key, a package missing, no network) is named
  with what is missing, instead of inspect's or the client library's traceback.
- The same model twice, or more samples x epochs than a run can hold in memory.
- A task whose arguments leave it no samples.
- An unreadable log in `--log-dir` (a crash can leave one) is set aside, renamed, with a
  message, so that resuming goes on; nothing is deleted.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from harness.errors import HarnessUsageError

MAX_SAMPLE_EPOCHS = 10_000_000  # samples x epochs of one task: inspect holds each in memory
_MARKUP = re.compile(r"\[/?(?:bold|blue|red|green|yellow|italic|dim)\]")
_ENV_NAME = re.compile(r"\b[A-Z][A-Z0-9_]*_(?:API_KEY|TOKEN|BASE_URL)\b")


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
