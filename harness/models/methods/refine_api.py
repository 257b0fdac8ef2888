"""`pdr/INNER` and `sr/INNER`: Parallel-Distill-Refine and Sequential Refinement as model providers.

Model args (`-M key=value`):
    rounds: PDR's schedule, drafts per round, e.g. `8,4,1` (default); the last must be 1. For
        `sr/`, the number of rounds R (default 3): one draft each, R - 1 refinements.
    workspace_tokens: kappa, the workspace bound in tokens (default 500), counted with the inner
        model's tokenizer where it has one, else in words.
    distill: `global` (default; the spec's `global_summary`), `shared_topk`, `per_sample_topk`,
        `random_k`. `sr/` takes `workspace=summary` (default, the global summary of the last
        draft) or `verbatim` (the last draft itself, cut at kappa).
    k: drafts kept by the top-k and random-k schemes (default 2).
    topk_score: `self` (the model rates drafts 0-10; default) or `vote` (answer agreement; ours).
    temperature: draft temperature (default 0.7; drafts must differ). Distill and rating calls
        use 0.
    seed: base seed of the calls (default: the run's --seed, else 0).
    inner_*: any other argument is passed to the inner model without its `inner_` prefix,
        e.g. `-M inner_batch_size=16` for `local/`.

What is ours and not the paper's (specs/pdr.md §4) is recorded in every output's metadata under
`reconstructed`: the prompts (`refine-prompts-v1`), the critical-path B_seq rule, SR's workspace
rule, the per-sample top-k selection and the vote scorer.

Each call's answer is the last round's single draft. Its metadata (`harness_method`) holds the
schedule, every round's workspaces and drafts (failed ones with their error) and both budgets in
both conventions; the budgets are also summed per sample (see `record`). The wrapper reports no
token usage of its own: the inner model's calls carry it, so nothing is counted twice.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    get_model,
)
from inspect_ai.tool import ToolChoice, ToolInfo
from inspect_ai.util import span

from harness.errors import HarnessUsageError
from harness.models.methods.distill import DistillSettings
from harness.models.methods.prompts import PROMPT_VERSION
from harness.models.methods.record import add_call_budget
from harness.models.methods.refine_loop import CallOutput, RefineSettings, refine
from harness.models.methods.token_count import counter_for
from harness.models.usage import word_usage

RECONSTRUCTED = (
    "PDR/SR (specs/pdr.md section 4): prompts are ours (refine-prompts-v1); the B_seq "
    "critical-path rule, SR's workspace rule, per_sample_topk's selection and the vote "
    "scorer are ours; the paper's kappa, rounds, temperature and distill model are unknown"
)


def parse_rounds(value: Any) -> tuple[int, ...]:
    """`8,4,1`, `[8, 4, 1]` or `4` as a tuple of draft counts."""
    if isinstance(value, int):
        parts: list[Any] = [value]
    elif isinstance(value, str):
        parts = [p for p in value.replace(" ", "").split(",") if p]
    elif isinstance(value, list | tuple):
        parts = list(value)
    else:
        parts = []
    try:
        rounds = tuple(int(p) for p in parts)
    except (TypeError, ValueError):
        rounds = ()
    if not rounds or any(r < 1 for r in rounds):
        raise HarnessUsageError(f"rounds must be positive integers such as 8,4,1; got {value!r}")
    return rounds


def split_inner_args(args: dict[str, Any], method: str) -> dict[str, Any]:
    """The `inner_`-prefixed arguments without their prefix; any other is a usage error."""
    bad = sorted(k for k in args if not k.startswith("inner_"))
    if bad:
        raise HarnessUsageError(
            f"{method}/: unknown argument {', '.join(bad)}; pass arguments for the inner model "
            f"as -M inner_NAME=VALUE"
        )
    return {k.removeprefix("inner_"): v for k, v in args.items()}


class RefineAPI(ModelAPI):
    """Runs a refinement schedule through the inner model; see the module docstring."""

    method = "pdr"

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        rounds: Any = "8,4,1",
        workspace_tokens: int = 500,
        distill: str = "global",
        k: int = 2,
        topk_score: str = "self",
        temperature: float = 0.7,
        seed: int | None = None,
        **inner_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        distill = "global" if distill == "global_summary" else str(distill)
        schedule = self.schedule(rounds)
        try:
            self.settings = RefineSettings(
                schedule=schedule,
                distill=DistillSettings(distill, int(workspace_tokens), int(k), topk_score),  # type: ignore[arg-type]
                temperature=float(temperature),
                seed=int(seed if seed is not None else (config.seed or 0)),
            )
        except ValueError as ex:
            raise HarnessUsageError(f"{self.method}/: {ex}") from None
        if not model_name or "/" not in model_name:
            raise HarnessUsageError(
                f"{self.method}/ wraps a model: write {self.method}/PROVIDER/NAME, "
                f"for example {self.method}/local/tiny-arith"
            )
        inner = split_inner_args(inner_args, self.method)
        self.inner = get_model(model_name, base_url=base_url, api_key=api_key, **inner)
        self.counter = counter_for(self.inner.api)

    def schedule(self, rounds: Any) -> tuple[int, ...]:
        """Drafts per round from the `rounds` argument."""
        return parse_rounds(rounds)

    def max_connections(self) -> int:
        """As many samples at once as the inner model takes calls."""
        return self.inner.api.max_connections()

    def describe(self) -> dict[str, Any]:
        """The settings recorded with every output."""
        s = self.settings
        return {
            "method": self.method,
            "inner_model": str(self.inner),
            "prompt_version": PROMPT_VERSION,
            "schedule": list(s.schedule),
            "workspace_tokens": s.distill.kappa,
            "distill": s.distill.scheme,
            "k": s.distill.k,
            "topk_score": s.distill.topk_score,
            "temperature": s.temperature,
            "seed": s.seed,
            "token_counter": self.counter.kind,
            "reconstructed": RECONSTRUCTED,
        }

    async def _call(self, messages: list[ChatMessage], config: GenerateConfig) -> CallOutput:
        out = await self.inner.generate(messages, config=config)
        if out.error:
            raise RuntimeError(out.error)
        usage = out.usage or word_usage(messages, out.completion)
        return CallOutput(out.completion, usage.input_tokens, usage.output_tokens)

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """Run the schedule; the answer is the last round's draft."""
        async with span(f"{self.method} {','.join(map(str, self.settings.schedule))}"):
            result = await refine(input, self.settings, self._call, self.counter, config)
        add_call_budget(self.method, PROMPT_VERSION, result.budget)
        output = ModelOutput.from_content(
            model=f"{self.method}/{self.inner}", content=result.final.text
        )
        output.metadata = {
            "harness_method": {
                **self.describe(),
                "budget": result.budget.as_dict(),
                "rounds": [r.as_dict() for r in result.rounds],
            }
        }
        return output


class SequentialRefineAPI(RefineAPI):
    """`sr/INNER`: one draft per round; `rounds=R` rounds, `workspace=summary|verbatim`."""

    method = "sr"

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        rounds: Any = 3,
        workspace: str = "summary",
        workspace_tokens: int = 500,
        temperature: float = 0.7,
        seed: int | None = None,
        **inner_args: Any,
    ) -> None:
        if workspace not in ("summary", "verbatim"):
            raise HarnessUsageError(
                f"sr/: workspace must be summary or verbatim, got {workspace!r}"
            )
        self.workspace = workspace
        super().__init__(
            model_name,
            base_url,
            api_key,
            config,
            rounds=rounds,
            workspace_tokens=workspace_tokens,
            distill="global" if workspace == "summary" else "shared_topk",
            k=1,
            topk_score="self",
            temperature=temperature,
            seed=seed,
            **inner_args,
        )

    def schedule(self, rounds: Any) -> tuple[int, ...]:
        """R rounds of one draft each."""
        parsed = parse_rounds(rounds)
        if len(parsed) != 1:
            raise HarnessUsageError(f"sr/: rounds is one positive integer R, got {rounds!r}")
        return (1,) * parsed[0]

    def describe(self) -> dict[str, Any]:
        """PDR's description plus the workspace rule."""
        return {**super().describe(), "workspace": self.workspace}
