"""The policies as inspect model providers: `--model serving/POLICY`, the eval's "model".

`serving/fcfs`, `serving/srpt`, `serving/sjf`, `serving/uniboost`, `serving/uniboost-decode`
(see `harness.suites.serving.policies`). Model arguments: `-M gamma0=10` (γ's start, or its
fixed value), `-M adaptive=false` (hold γ fixed: no γ-Ada), `-M sigma=0.5` (SJF's error),
`-M allow_tp=true` (run UniBoost at `-T tensor_parallel` > 1, which it refuses by default).
Like the iwg suite's scripted orchestrators these are not language models: the provider runs
the simulator on the slice the solver bound and replies with a JSON summary.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)

from harness.errors import HarnessUsageError
from harness.models.sample_context import PerSampleAPI
from harness.suites.serving.policies import POLICY_NAMES, SIGMA, UniBoost, make_policy
from harness.suites.serving.simulator import simulate
from harness.suites.serving.workload import Run, current_run

ARGS = {"gamma0": float, "adaptive": bool, "sigma": float, "allow_tp": bool}


def check_tensor_parallel(policy: str, ranks: int, allow: bool) -> None:
    """UniBoost is off at tensor parallelism > 1 unless overridden, as in the authors' code.

    Its Φ compares wall-clock arrival stamps, which differ across ranks. The simulator has
    one clock, so the check only mirrors the configuration rule.

    Raises:
        HarnessUsageError: a UniBoost policy with ranks > 1 and no override.

    """
    if policy.startswith("uniboost") and ranks > 1 and not allow:
        raise HarnessUsageError(
            f"serving/{policy} is disabled at tensor_parallel={ranks} (its arrival stamps differ "
            "across ranks, as in the authors' code); pass -M allow_tp=true to override"
        )


def _arg(name: str, value: Any) -> Any:
    kind = ARGS[name]
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text not in ("true", "false", "1", "0"):
            raise HarnessUsageError(f"-M {name}: expected true or false, got {value!r}")
        return text in ("true", "1")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise HarnessUsageError(f"-M {name}: expected a number, got {value!r}") from None
    if not (math.isfinite(number) and number > 0):
        raise HarnessUsageError(f"-M {name}: expected a positive number, got {value!r}")
    return number


class PolicyAPI(PerSampleAPI[Run]):
    """`serving/POLICY`: simulates the bound slice under the policy."""

    bound = staticmethod(current_run)  # the current sample's simulation
    outside = (
        "serving/{model} is a scheduling policy; it only answers inside "
        "`harness eval --suite serving`"
    )

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        if model_name not in POLICY_NAMES:
            raise HarnessUsageError(
                f"unknown serving policy 'serving/{model_name}'; choose one of: "
                + ", ".join(f"serving/{p}" for p in POLICY_NAMES)
            )
        unknown = sorted(set(model_args) - set(ARGS))
        if unknown:
            raise HarnessUsageError(
                f"serving/{model_name}: unknown model argument(s) {', '.join(unknown)}; "
                f"known: {', '.join(ARGS)}"
            )
        self.options = {k: _arg(k, v) for k, v in model_args.items()}
        self.allow_tp = bool(self.options.pop("allow_tp", False))
        make_policy(model_name, **self.options)  # refuse bad arguments before the run

    def max_connections(self) -> int:
        """Simulations are CPU-bound; a few at once."""
        return 4

    async def answer(self, run: Run, input: list[ChatMessage]) -> ModelOutput:
        """Simulate the current sample's slice; reply with a JSON summary."""
        check_tensor_parallel(self.model_name, run.server.tensor_parallel, self.allow_tp)
        options = {"sigma": SIGMA, **self.options}
        policy = make_policy(self.model_name, **options)
        result = simulate(list(run.workload.requests), policy, run.server, seed=run.seed)
        run.result = result
        if isinstance(policy, UniBoost):
            history = policy.controller.history
            run.extras["gamma_time"] = [round(u.time, 3) for u in history]
            run.extras["gamma"] = [round(u.gamma, 4) for u in history]
            run.extras["gamma_converged"] = policy.controller.converged()
        run.extras["guard_breaches"] = int(getattr(policy, "guard_breaches", 0))
        summary = {
            "policy": self.model_name,
            "requests": len(result.ttlt),
            "ttlt_p99": float(np.percentile(result.ttlt, 99)),
            "ttft_p99": float(np.percentile(result.ttft, 99)),
            "preemptions": int(result.preemptions.sum()),
        }
        output = ModelOutput.from_content(
            model=f"serving/{self.model_name}", content=json.dumps(summary)
        )
        output.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
        return output


@modelapi(name="serving")
def serving_policy() -> type[ModelAPI]:
    """Scheduling policies of the serving simulator: serving/fcfs, serving/uniboost, ..."""
    return PolicyAPI
