"""Tamper checks: a log's outputs and scores against the digests its own manifest holds.

After a run, `harness eval` writes into the log one digest per sample and epoch of its output
(id, epoch, completion, error) and, since issue 42, of its scores (`harness.eval._manifest`,
`harness_manifest_outputs`). A log whose answers or scores were rewritten afterwards, with the
manifest left as it was, no longer matches them; `tamper_reason` says how, in one line, and
the report and the site print it beside the score.

What this can and cannot see: it checks a log against itself. Someone who rewrites the samples
and then recomputes every digest in the manifest is not caught; nothing in a log can catch
that without a key it does not carry. Logs without the digests (plain inspect, or older
harness logs) are not checked; older logs have no score digests, and their scores are checked
only as the summaries against the samples.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))


def output_digest(sample_id: Any, epoch: Any, completion: Any, error: Any) -> str:
    """The SHA-256 (64 hex digits) of one sample-epoch's output; the manifest keeps a prefix."""
    text = _canonical([str(sample_id), epoch, completion, error])
    return hashlib.sha256(text.encode()).hexdigest()


def scores_digest(values: Mapping[str, Any]) -> str:
    """The SHA-256 of one sample-epoch's score values by scorer name."""
    return hashlib.sha256(_canonical(dict(values)).encode()).hexdigest()


def _matches(full: str, recorded: Any) -> bool:
    return isinstance(recorded, str) and len(recorded) >= 8 and full.startswith(recorded)


def _key(sample: Mapping[str, Any]) -> str:
    return f"{sample.get('id')}#{sample.get('epoch') or 1}"


def _values(sample: Mapping[str, Any]) -> dict[str, Any]:
    scores = sample.get("scores")
    if not isinstance(scores, dict):
        return {}
    return {str(k): (v.get("value") if isinstance(v, dict) else v) for k, v in scores.items()}


def _sample_output(sample: Mapping[str, Any]) -> tuple[Any, Any]:
    """A whole sample's completion and error message, as the writer hashed them."""
    output = sample.get("output")
    completion = output.get("completion", "") if isinstance(output, dict) else ""
    error = sample.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    return completion, message


def tamper_reason(
    outputs: Mapping[str, Any],
    summaries: Iterable[Mapping[str, Any]],
    samples: Iterable[Mapping[str, Any]],
) -> str:
    """Why a log does not match its manifest's digests, one line, or "" when it does.

    Args:
        outputs: the manifest's post-run part (`harness_manifest_outputs`), its shape checked
            (`harness.manifest_shape`).
        summaries: the log's sample summaries, whose scores the report and the site read.
        samples: the log's whole samples (their outputs are not in the summaries).

    """
    recorded = outputs.get("per_sample") or {}
    recorded_scores = outputs.get("scores") or {}
    if not recorded:
        return ""
    summary_scores = {_key(s): _values(s) for s in summaries}
    seen: set[str] = set()
    outputs_differ = summaries_differ = 0
    scores_differ: set[str] = set()  # in the summaries (what is reported) or the samples

    def check_scores(key: str, values: dict[str, Any]) -> None:
        if key in recorded_scores and not _matches(scores_digest(values), recorded_scores[key]):
            scores_differ.add(key)

    for sample in samples:
        key = _key(sample)
        seen.add(key)
        completion, error = _sample_output(sample)
        digest = output_digest(sample.get("id"), sample.get("epoch") or 1, completion, error)
        if key in recorded and not _matches(digest, recorded[key]):
            outputs_differ += 1
        values = _values(sample)
        check_scores(key, values)
        if key in summary_scores and summary_scores[key] != values:
            summaries_differ += 1
    for key, values in summary_scores.items():
        check_scores(key, values)
    logged = seen | set(summary_scores)  # the report reads the summaries: none may be missing
    n = len(recorded)
    parts = []
    if outputs_differ:
        parts.append(f"outputs do not match the log's manifest: {outputs_differ} of {n} "
                     "samples differ")  # fmt: skip
    if scores_differ:
        parts.append(f"scores do not match the log's manifest: {len(scores_differ)} of {n} samples "
                     "differ")  # fmt: skip
    if summaries_differ:
        parts.append(f"the summaries' scores differ from the samples' in {summaries_differ} of "
                     f"{len(seen)} samples")  # fmt: skip
    if added := len(logged - set(recorded)):
        parts.append(f"{added} samples are not in the log's manifest")
    if missing := len(set(recorded) - set(summary_scores)):
        parts.append(f"{missing} of the manifest's {n} samples are missing from the log")
    return "; ".join(parts)
