"""Suite `aime`: AIME 2024 and AIME 2025, 30 problems each, answers integers 0-999.

Local copies: `DIR/aime/aime2024.jsonl` and `DIR/aime/aime2025.jsonl` (fields `problem`,
`answer`). Sample ids are `2024-N` and `2025-N`, N the 1-based row position in the file.
The prompt and extraction rules are ours (specs/aime.md §2.5, §4). With `--epochs K`, `harness
eval` reduces epochs with the mean and the unbiased pass@K.
"""

from __future__ import annotations

from typing import Literal

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.solver import generate, prompt_template

from harness.answer_extraction import ExtractionMode
from harness.data import DatasetSpec, int_in_range, load_rows, nonempty_str
from harness.models.sample_context import bind_sample
from harness.scorers.math_answer import math_answer
from harness.suites.arg_ranges import checked_args

PROMPT = "{prompt}\n\nPlease reason step by step, and put your final answer within \\boxed{{}}."

_FIELDS = {"problem": nonempty_str, "answer": int_in_range(0, 999)}

AIME_DATA = {
    2024: DatasetSpec(
        name="aime2024",
        hub_id="Maxwell-Jia/AIME_2024",
        local_path="aime/aime2024.jsonl",
        fields=_FIELDS,
        hub_columns={"Problem": "problem", "Answer": "answer"},
    ),
    2025: DatasetSpec(
        name="aime2025",
        hub_id="yentinglin/aime_2025",
        local_path="aime/aime2025.jsonl",
        fields=_FIELDS,
    ),
}


def aime_samples(
    year: Literal[2024, 2025], data_dir: str | None = None, skip_bad_rows: bool = False
) -> list[Sample]:
    """The year's problems as samples with ids `YEAR-N`."""
    loaded = load_rows(AIME_DATA[year], data_dir)
    if not skip_bad_rows:
        loaded.raise_for_errors(", or pass -T skip_bad_rows=true to load the other rows")
    return [
        Sample(
            id=f"{year}-{number}",
            input=row["problem"],
            target=str(row["answer"]),
            metadata={"year": year, "row": number, "url": row.get("url")},
        )
        for number, row in loaded.rows
    ]


def _aime_task(samples: list[Sample], extraction: ExtractionMode, max_tokens: int | None) -> Task:
    return Task(
        dataset=MemoryDataset(samples),
        solver=[bind_sample(), prompt_template(PROMPT), generate()],
        scorer=math_answer(extraction=extraction),
        config=GenerateConfig(max_tokens=max_tokens),
        metadata={"suite": "aime", "extraction": extraction, "prompt": "ours (specs/aime.md)"},
    )


@task
@checked_args()
def aime2024(
    data_dir: str | None = None,
    extraction: ExtractionMode = "boxed_or_int",
    max_tokens: int | None = None,
    skip_bad_rows: bool = False,
) -> Task:
    """AIME 2024 (I and II), 30 problems."""
    return _aime_task(aime_samples(2024, data_dir, skip_bad_rows), extraction, max_tokens)


@task
@checked_args()
def aime2025(
    data_dir: str | None = None,
    extraction: ExtractionMode = "boxed_or_int",
    max_tokens: int | None = None,
    skip_bad_rows: bool = False,
) -> Task:
    """AIME 2025 (I and II), 30 problems."""
    return _aime_task(aime_samples(2025, data_dir, skip_bad_rows), extraction, max_tokens)


@task
@checked_args()
def aime(
    data_dir: str | None = None,
    extraction: ExtractionMode = "boxed_or_int",
    max_tokens: int | None = None,
    skip_bad_rows: bool = False,
) -> Task:
    """AIME 2024 and 2025 pooled, 60 problems (`inspect eval harness/aime`)."""
    samples = aime_samples(2024, data_dir, skip_bad_rows) + aime_samples(
        2025, data_dir, skip_bad_rows
    )
    return _aime_task(samples, extraction, max_tokens)
