"""The runs of a suite that trains: each sample's `metadata.run`, with the sample's own keys."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def load_training_runs(location: str, keys: Sequence[str]) -> list[dict[str, Any]]:
    """One dict per finished sample: `metadata.<key>` for each key, then the run's own fields.

    Reads the full metadata (a run's curves exceed the 1k that `samples_df` keeps in its summary
    columns); errored or unfinished samples, which have no run, are left out.
    """
    from inspect_ai.analysis import SampleColumn, samples_df

    columns = [SampleColumn(key, path=f"metadata.{key}") for key in keys]
    columns.append(SampleColumn("run", path="metadata.run", full=True))
    df = samples_df(location, columns=columns, quiet=True)
    runs = []
    for row in df.to_dict("records"):
        run = json.loads(row["run"]) if isinstance(row["run"], str) else row["run"]
        if isinstance(run, dict):
            runs.append({**{key: row[key] for key in keys}, **run})
    return runs
