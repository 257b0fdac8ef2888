"""`--model-cost-config FILE`: model prices in inspect-ai's own format, given to inspect.

The file is what `inspect eval --model-cost-config` reads: a YAML or JSON mapping from a model
name to its `ModelCost` (dollars per million tokens: `input`, `output`, `input_cache_write`,
`input_cache_read`). inspect prices each call with it and records the dollars in the sample's
`model_usage[...].total_cost`, which `harness.report._cost` reads. The harness keeps no price
table of its own.

inspect's `set_model_cost` only prices models its database knows; a model it does not know
(`local/...`, `scripted/...`, a private deployment) is registered here with `set_model_info`
carrying the same `ModelCost`, so every model of the file is priced the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.bounded_json import MAX_DEPTH, depth
from harness.errors import HarnessUsageError
from harness.outside_numbers import require_number

COST_FIELDS = ("input", "output", "input_cache_write", "input_cache_read")
MAX_CONFIG_BYTES = 1 << 20  # a price file is a few KB
MAX_COST_LIMIT = 1e9  # dollars per sample: a limit past this never fires
MAX_PRICE = 100_000.0  # $ per million tokens: prices run to hundreds; more is a typo


def read_cost_config(path: str) -> dict[str, Any]:
    """The file as `{model: ModelCost}`, or a usage error naming the file and the entry."""
    import yaml
    from inspect_ai.model import ModelCost
    from pydantic import ValidationError

    file = Path(path)
    if not file.is_file():
        raise HarnessUsageError(f"--model-cost-config {path}: no such file")
    if file.stat().st_size > MAX_CONFIG_BYTES:
        raise HarnessUsageError(f"--model-cost-config {path}: over {MAX_CONFIG_BYTES} bytes")
    raw = file.read_bytes()
    if (found := depth(raw)) > MAX_DEPTH:
        raise HarnessUsageError(
            f"--model-cost-config {path}: nested {found} deep, over the limit of {MAX_DEPTH}; "
            "a price file is a mapping of model name to four prices"
        )
    text = raw.decode("utf-8", errors="replace")
    try:
        data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError, ValueError) as ex:
        reason = " ".join(str(ex).split())[:120]
        raise HarnessUsageError(
            f"--model-cost-config {path}: not JSON or YAML ({reason})"
        ) from None
    except RecursionError:  # YAML's block nesting, which the bracket scan does not count
        raise HarnessUsageError(
            f"--model-cost-config {path}: nested too deep to read; a price file is a mapping "
            "of model name to four prices"
        ) from None
    if not isinstance(data, dict) or not data:
        raise HarnessUsageError(
            f"--model-cost-config {path}: needs a mapping of model name to "
            f"{{{', '.join(COST_FIELDS)}}} in dollars per million tokens"
        )
    costs: dict[str, Any] = {}
    for name, entry in data.items():
        _check_prices(path, str(name), entry)
        try:
            if not isinstance(entry, dict):
                raise TypeError("not a mapping")
            costs[str(name)] = ModelCost(**entry)
        except (ValidationError, TypeError) as ex:
            first = str(ex).splitlines()[1] if isinstance(ex, ValidationError) else str(ex)
            raise HarnessUsageError(
                f"--model-cost-config {path}: entry '{name}' is not a ModelCost "
                f"({first.strip()}); it needs {', '.join(COST_FIELDS)} in $ per million tokens"
            ) from None
    return costs


def _check_prices(path: str, name: str, entry: Any) -> None:
    """Each price of an entry a number in [0, MAX_PRICE]; no field but the four."""
    if not isinstance(entry, dict):
        return  # said below, with the fields it needs
    unknown = sorted(str(k) for k in entry if k not in COST_FIELDS)
    if unknown:
        raise HarnessUsageError(
            f"--model-cost-config {path}: entry '{name}' has no field {', '.join(unknown)}; "
            f"its fields are {', '.join(COST_FIELDS)} ($ per million tokens)"
        )
    for key in COST_FIELDS:
        if key in entry:  # YAML reads 3e-6 as a string: such a string is read as its number
            what = f"--model-cost-config {path}: entry '{name}' {key}"
            entry[key] = require_number(entry[key], what, low=0.0, high=MAX_PRICE, text=True)


def register_costs(costs: dict[str, Any]) -> None:
    """Give inspect every price, whether or not its model database knows the model.

    `set_model_cost` where the database knows the model, else `set_model_info` with the cost
    (inspect refuses `set_model_cost` for models it does not know).
    """
    from inspect_ai.model import ModelInfo, get_model_info, set_model_cost, set_model_info

    for name, cost in costs.items():
        if get_model_info(name) is None:
            set_model_info(name, ModelInfo(cost=cost))
        else:
            set_model_cost(name, cost)


def apply_prices(path: str | None, cost_limit: float | None, models: list[Any]) -> None:
    """Register the file's prices with inspect; a cost limit needs a price for every model."""
    from inspect_ai.model import get_model_info

    if cost_limit is not None:
        require_number(cost_limit, "--cost-limit (dollars a sample may spend)", low=0.0,
                       above_low=True, high=MAX_COST_LIMIT)  # fmt: skip
    if path is not None:
        register_costs(read_cost_config(path))
    if cost_limit is not None:
        unpriced = [
            str(m) for m in models if (i := get_model_info(str(m))) is None or i.cost is None
        ]
        if unpriced:
            raise HarnessUsageError(
                f"--cost-limit needs a price for every model; none for {', '.join(unpriced)}: "
                "give one in --model-cost-config FILE"
            )
