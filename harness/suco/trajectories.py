r"""Reasoning trajectories from an inspect log: prompt, CoT, answer text, gold answer, correctness.

Per sample (inspect's public `read_eval_log`):

- prompt: the sample's input text (several input messages are joined by blank lines);
- completion: the final assistant completion, `sample.output.completion`;
- CoT and answer (ours): when the completion has a `</think>`, the CoT is the text between the
  `<think>` before it (or the start, for templates that put `<think>` in the prompt) and the
  first `</think>`, and the answer text is what follows. Otherwise the answer is the sentence
  holding the last `\boxed{`, or the last sentence when there is no box, and the CoT is
  everything before it;
- gold answer: `sample.target` (the first one when there are several);
- correct: the first score's value read by the one score parser, `harness.logs.parse_score`
  (1.0 is correct); None when the sample has no score at all.

Samples that errored, have no target, or whose score `parse_score` cannot read (an error, with
its reason) are left out and counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessUsageError
from harness.suco.segment import sentence_ends


@dataclass(frozen=True, slots=True)
class CompletionParts:
    """A completion split into reasoning and answer."""

    cot: str  # the reasoning z, without the think tags
    answer: str  # the text after the reasoning
    think_block: bool  # the completion has think_open ... think_close in that order


def split_completion(
    text: str, think_open: str = "<think>", think_close: str = "</think>"
) -> CompletionParts:
    """Split a completion into CoT and answer text; see the module docstring for the rule."""
    close = text.find(think_close) if think_close else -1
    if close >= 0:
        opening = text.rfind(think_open, 0, close) if think_open else -1
        begin = opening + len(think_open) if opening >= 0 else 0
        return CompletionParts(text[begin:close], text[close + len(think_close) :], opening >= 0)
    ends = sentence_ends(text)
    if not ends:
        return CompletionParts("", text, False)
    box = text.rfind("\\boxed{")
    if box < 0:
        last = len(ends) - 1
    else:
        last = next(i for i, end in enumerate(ends) if end > box)
    start = ends[last - 1] if last > 0 else 0
    return CompletionParts(text[:start], text[start:], False)


@dataclass(frozen=True, slots=True)
class Trajectory:
    """One sample's reasoning trajectory."""

    id: str  # the sample id
    epoch: int  # the sample's epoch
    prompt: str  # the input text
    completion: str  # the final assistant completion
    cot: str  # the reasoning part of the completion
    answer: str  # the answer part of the completion
    think_block: bool  # the completion had an explicit think block
    gold: str  # the gold answer y*
    correct: bool | None  # the log's first score, None when unscored


@dataclass(frozen=True, slots=True)
class LogTrajectories:
    """The trajectories of one log and what was left out."""

    location: str  # the log file
    trajectories: tuple[Trajectory, ...]  # one per usable sample
    skipped: tuple[str, ...]  # "id: reason" for each sample left out


def read_trajectories(
    path: str | Path, think_open: str = "<think>", think_close: str = "</think>"
) -> LogTrajectories:
    """Every usable sample of an inspect log as a `Trajectory`.

    Raises:
        HarnessUsageError: the log is missing or unreadable, or has no usable samples.

    """
    from harness.logs import parse_score, read_full_log

    location = str(path)
    if "://" not in location and not Path(location).is_file():
        raise HarnessUsageError(f"{location}: no such log file; give an inspect .eval/.json log")
    log = read_full_log(location)
    if not log.samples:
        raise HarnessUsageError(
            f"{location}: the log has no samples; give a log of a finished eval"
        )
    out: list[Trajectory] = []
    skipped: list[str] = []
    for s in log.samples:
        sid = str(s.id)
        if s.error is not None:
            skipped.append(f"{sid}: the sample errored")
            continue
        gold = s.target if isinstance(s.target, str) else (s.target[0] if s.target else "")
        if not gold.strip():
            skipped.append(f"{sid}: no target")
            continue
        if isinstance(s.input, str):
            prompt = s.input
        else:
            prompt = "\n\n".join(m.text for m in s.input)
        completion = s.output.completion if s.output else ""
        parts = split_completion(completion, think_open, think_close)
        correct = None
        if s.scores:
            value, reason = parse_score(next(iter(s.scores.values())).value)
            if reason:
                skipped.append(f"{sid}: {reason}")
                continue
            correct = value >= 1.0
        out.append(Trajectory(sid, s.epoch, prompt, completion, parts.cot, parts.answer,
                              parts.think_block, gold.strip(), correct))  # fmt: skip
    if not out:
        raise HarnessUsageError(
            f"{location}: no usable samples ({len(skipped)} left out, e.g. {skipped[0]})"
        )
    return LogTrajectories(location, tuple(out), tuple(skipped))
