"""What `harness eval` is asked to do, as data: the request the CLI parses and `run` takes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class EvalRequest:
    """What `harness eval` was asked to do."""

    suite: str  # suite name
    models: tuple[str, ...]  # model specs, for example ("local/tiny-arith",)
    limit: int | None = None  # samples per task
    epochs: int = 1  # samples per problem
    seed: int | None = None  # generation seed passed to every model
    log_dir: str = "logs"  # where inspect writes (and resumes) logs
    data_dir: str | None = None  # local data folder, else HARNESS_DATA_DIR, else the hub
    task_args: dict[str, Any] = field(default_factory=dict)  # -T
    model_args: dict[str, Any] = field(default_factory=dict)  # -M
    # inspect's retry, timeout and connection settings, under its names; None is inspect's default
    max_retries: int | None = None  # retries per model call (inspect: unbounded)
    timeout: int | None = None  # seconds per model call, retries included
    attempt_timeout: int | None = None  # seconds per attempt before it is abandoned and retried
    max_connections: int | None = None  # concurrent calls per model (else the provider's own)
    display: str | None = None  # inspect display: full, rich, plain, log, none
    until: str | None = None  # "decided": stop asking a model once its pairs are resolved
    margin: float = 0.05  # equivalence margin of --until decided
    budget: int | None = None  # items per model at most, with --until decided
    order_seed: int = 0  # the shared random order of items, with --until decided
    width: float | None = None  # with --until decided and one model: stop below this width
    active: bool = False  # with --until decided: add one model to --history, items chosen actively
    history: tuple[str, ...] = ()  # past logs of other models, for --active
    model_cost_config: str | None = None  # inspect's price file (YAML or JSON of ModelCost)
    cost_limit: float | None = None  # inspect's per-sample cost limit in dollars
    only_task: str | None = None  # run this one of the suite's tasks (`harness reproduce`)
    max_work: float | None = None  # a task's work limit, in its own unit (else its default)
