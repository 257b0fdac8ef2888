"""Read a JSONL file line by line, turning a malformed line into a one-line usage error."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.errors import HarnessUsageError


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line.

    Raises:
        HarnessUsageError: a line is not valid JSON or not a JSON object (named by number).

    """
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as ex:
            raise HarnessUsageError(f"{path} line {number}: not valid JSON ({ex.msg})") from None
        if not isinstance(item, dict):
            raise HarnessUsageError(f"{path} line {number}: expected a JSON object")
        yield number, item
