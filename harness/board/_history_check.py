"""Checks that a history of other models' logs may take part in an active run.

`harness eval --until decided --active --history LOGDIR` compares the added model with the
history's models item by item, by sample id. Ids say nothing of content: a history over other
questions under the same ids would be compared as if it were over these. So each history log
must carry full-content digests of its samples (its manifest's data, scheme 2:
`harness.eval._data_content`), and every shared item's digest must equal the digest of this
run's sample under that id. A log without them cannot be checked, and is refused.

The added model must be new: a model already in the history (the same model spec, with the
same arguments; a `replay/` or `local/` path compared where it points) would be compared with
itself.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessUsageError
from harness.logs import DesignLookup
from harness.terminal import printable

_ENDPOINT_ARGS = frozenset({"base_url", "model_base_url"})  # told apart by the model, not here
_PATH_PROVIDERS = ("replay", "local")


def same_name(name: str) -> str:
    """A model name as a person reads it: NFKC, case folded, invisible characters gone."""
    text = unicodedata.normalize("NFKC", name)
    text = "".join(c for c in text if unicodedata.category(c)[0] not in ("C", "Z") or c == " ")
    return " ".join(text.casefold().split())


def _spec_key(model: str) -> str:
    provider, _, rest = model.partition("/")
    if provider in _PATH_PROVIDERS and rest:
        try:
            rest = str(Path(rest).expanduser().resolve(strict=False))
        except (OSError, ValueError, RuntimeError):
            pass
    return same_name(f"{provider}/{rest}" if rest else provider)


def _as_text(value: Any) -> str:
    """A model argument as text: `-M answer=1` is the int 1 on the command line, "1" in a log."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _logged(text: str) -> str:
    """A log's argument (JSON, or a redacted secret) as text."""
    try:
        return _as_text(json.loads(text))
    except ValueError:
        return text


def _args_key(args: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, _logged(v)) for k, v in args if k not in _ENDPOINT_ARGS))


def check_new_model(model: str, model_args: Mapping[str, Any], records: Sequence[Any]) -> None:
    """A one-line error when the added model is already one of the history's logs' models."""
    from harness.logs import redact

    mine = (_spec_key(model), _args_key([(k, redact(k, v)) for k, v in model_args.items()]))
    for record in records:
        ident = record.identity
        if (_spec_key(ident.model), _args_key(ident.model_args)) == mine:
            raise HarnessUsageError(
                f"--active: {printable(model, markup=False)} is already in the history (as "
                f"{printable(ident.arm_label, markup=False)} in {record.path}); it would be "
                "compared with itself: the added model must be a new one"
            )


def _digests(record: Any) -> dict[str, str] | None:
    """The log's per-sample full-content digests, or None where it has none to check."""
    from harness.eval import SCHEME, manifest_of

    manifest = manifest_of(record)
    data = manifest.data if manifest is not None else None
    if not isinstance(data, dict) or data.get("scheme") != SCHEME:
        return None
    per_sample = data.get("per_sample")
    if not isinstance(per_sample, dict):
        return None
    return {str(k): str(v) for k, v in per_sample.items()}


def check_same_questions(samples: Sequence[Any], records: Sequence[Any]) -> None:
    """A one-line error naming the first history log and item whose question is not this run's.

    Args:
        samples: This run's samples, in its order.
        records: The history's logs of the task (`LogRecord`s), those the board is made of.

    """
    from harness.eval import SAMPLE_DIGITS, sample_digests

    mine = {k: d[:SAMPLE_DIGITS] for k, d in sample_digests(samples).items()}
    for record in sorted(records, key=lambda r: r.path):
        theirs = _digests(record)
        where = printable(record.path, markup=False)
        if theirs is None:
            raise HarnessUsageError(
                f"--active: the history log {where} has no full-content digests of its data "
                "(no manifest, or one written before they were kept), so its questions cannot "
                "be checked against this run's; run that model again with `harness eval`"
            )
        asked = dict.fromkeys(s.id for s in record.samples)
        for item in (i for i in mine if i in asked):
            if item not in theirs:
                raise HarnessUsageError(
                    f"--active: the history log {where} scored item "
                    f"{printable(item, markup=False)!r} but its manifest has no digest of it, "
                    "so its question cannot be checked against this run's"
                )
            if theirs[item] != mine[item]:
                raise HarnessUsageError(
                    f"--active: the history log {where} asked another question under item "
                    f"{printable(item, markup=False)!r} (digest {theirs[item]}, this run's "
                    f"{mine[item]}); a history must be over this run's data"
                )


def history_records(
    dirs: Sequence[str], task: str, arms: Sequence[str], designs: DesignLookup
) -> list[Any]:
    """The history's logs of `task` whose arms make the board (`arms`: its models).

    `designs` gives a suite's design by name (the catalog's, passed down by the eval library).
    """
    from harness.logs import read_logs

    wanted = set(arms)
    return [r for r in read_logs(dirs, designs=designs).used
            if r.task == task and r.identity.arm_label in wanted]  # fmt: skip
