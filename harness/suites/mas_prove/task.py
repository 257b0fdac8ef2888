"""Suite `mas-prove`: process verification inside multi-agent systems (arXiv 2602.03053).

One task runs a grid: every sample is one (pattern, verifier, granularity, context) on one
problem and one replicate seed, and its metadata says which (`mp_*` keys) with the search's
counts; every search's candidates, verifier input, ranking and chosen index are in the sample's
transcript and in `mp_search_records`. The report section (`section.py`) compares each
configuration with the same pattern without verification.

One task, `mas_prove`, with `-T benchmark=`:
- `chain` (default): the seeded arithmetic chain (`chain.py`), for `local/tiny-arith` on a CPU;
- `aime2024`, `aime2025`: AIME through the `aime` loader, answers read with `-T
  extraction=lenient` (MAS-ProVe's rule, the default here), `lenient_compat` (its "answer is
  1000" -> 100 quirk), `strict` or `boxed_or_int`.

Reconstructed (spec §4): the patterns (reimplemented patterns, not the paper's frameworks), the
context strategies, the role prompts and the judge's wording, the placeholder text, N = 3 and
the sampling temperature. The logs' metadata says so (`reconstructed`).
"""

from __future__ import annotations

from typing import Any, Literal

from inspect_ai import Task, task
from inspect_ai.agent import AgentState
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver

from harness.errors import HarnessUsageError
from harness.models.sample_context import bind_sample
from harness.suites.aime import aime_samples
from harness.suites.arg_ranges import checked_args, count, positive
from harness.suites.mas_prove.chain import ChainProblem, first_integer, make_chains
from harness.suites.mas_prove.domains import AimeDomain, ChainDomain, Domain
from harness.suites.mas_prove.extraction import AIME_EXTRACTIONS, AimeExtraction, aime_answer
from harness.suites.mas_prove.gaia import GaiaDomain, gaia_exact, gaia_samples
from harness.suites.mas_prove.patterns import build_pattern
from harness.suites.mas_prove.runner import Runner, SearchSettings, SummaryMode
from harness.suites.mas_prove.settings import (
    VerifierSpecs,
    build_verifier,
    check_counts,
    parse_grid,
    resolve_model,
)
from harness.suites.mas_prove.verifiers import Reduction

RECONSTRUCTED = (
    "MAS-ProVe reimplemented from ../shared/specs/mas-prove.md: the patterns are ours "
    "(reimplementations of the patterns, not of Debate/DyLAN/MaAS/AFlow/ADAS/MAS-Zero); the "
    "context strategies, role prompts, judge wording, refusal text, N and temperature are "
    "reconstructed (spec §4); the toy verification model is the spec's, not the paper's"
)

PRESETS: dict[str, dict[str, Any]] = {
    # the default grid, measured on 2 CPU cores (README): every pattern x verifier x
    # granularity with the raw context
    "default": dict(problems=8, seeds=2, contexts="raw"),
    # every context strategy, more problems and seeds
    "full": dict(problems=20, seeds=3, contexts="raw,none,summary,summary+step"),
}


def _config_meta(pattern: str, verifier: str, granularity: str, context: str) -> dict[str, Any]:
    return {
        "mp_pattern": pattern,
        "mp_verifier": verifier,
        "mp_granularity": granularity,
        "mp_context": context,
        "mp_config": f"{pattern} / {verifier} / {granularity} / {context}",
    }


@solver
def mas_search(
    *,
    n: int,
    timeout: float,
    temperature: float | None,
    max_tokens: int | None,
    agents: int,
    rounds: int,
    aggregate: str,
    specs: dict[str, Any],
    summarizer: str | None,
    summary_mode: str,
    extraction: str = "lenient",
) -> Solver:
    """Run the sample's pattern with its verifier; the counts go in the sample's metadata."""
    verifier_specs = VerifierSpecs(**specs)
    summary_model = resolve_model(summarizer, "summarizer") if summarizer else None
    config = GenerateConfig(temperature=temperature, max_tokens=max_tokens)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        domain: Domain
        if "mp_chain" in meta:
            chain = meta["mp_chain"]
            problem = ChainProblem(
                chain["id"], chain["start"], tuple(map(tuple, chain["steps"])), chain["answer"]
            )
            domain = ChainDomain(problem)
        elif meta.get("mp_benchmark") == "gaia":
            domain = GaiaDomain(state.input_text, state.target.text)
        else:
            domain = AimeDomain(state.input_text, int(state.target.text), extraction)  # type: ignore[arg-type]
        settings = SearchSettings(
            verifier=build_verifier(meta["mp_verifier"].partition("-")[0], verifier_specs),
            n=n,
            granularity=meta["mp_granularity"],
            context=meta["mp_context"],
            timeout=timeout,
            summarizer=summary_model,
            summary_mode=summary_mode,  # type: ignore[arg-type]
        )
        runner = Runner(domain, get_model(), settings, config, key=str(state.sample_id))
        options: dict[str, Any] = {}
        pattern = meta["mp_pattern"]
        if pattern == "debate":
            options = {"n_agents": agents, "rounds": rounds, "aggregate": aggregate}
        elif pattern == "refine":
            options = {"rounds": rounds}
        elif pattern == "orchestrator":
            options = {"n_workers": agents}
        elif pattern == "workflow":
            options = {"n_generate": agents}
        agent = build_pattern(pattern, runner, **options)
        try:
            result = await agent(AgentState(messages=state.messages))
            state.output = result.output
            state.messages = result.messages
        finally:
            meta.update(runner.summary())
            meta["mp_search_records"] = [r.as_dict() for r in runner.records]
        return state

    return solve


@scorer(metrics=[accuracy(), stderr()])
def chain_answer() -> Scorer:
    """Correct when the first integer of the output is the chain's final value."""

    async def score(state: TaskState, target: Target) -> Score:
        text = state.output.completion if state.output else ""
        found = first_integer(text)
        ok = found is not None and found == int(target.text)
        return Score(
            value=CORRECT if ok else INCORRECT, answer=None if found is None else str(found)
        )

    return score


@scorer(metrics=[accuracy(), stderr()])
def aime_integer(*, extraction: AimeExtraction = "lenient") -> Scorer:
    """Correct when the extracted integer equals the reference (the mode is in the metadata)."""
    if extraction not in AIME_EXTRACTIONS:
        raise ValueError(f"unknown extraction {extraction!r}; valid: {AIME_EXTRACTIONS}")

    async def score(state: TaskState, target: Target) -> Score:
        text = state.output.completion if state.output else ""
        found = aime_answer(text, extraction)
        ok = found is not None and found == int(target.text)
        return Score(
            value=CORRECT if ok else INCORRECT,
            answer=None if found is None else str(found),
            metadata={"extraction": extraction},
        )

    return score


def _grid_samples(
    base: list[Sample], grid_args: dict[str, str], seeds: int, prm_reduction: str
) -> list[Sample]:
    grid = parse_grid(**grid_args)
    samples = []
    for pattern, name, granularity, context in grid.configs():
        verifier = f"prm-{prm_reduction}" if name == "prm" else name  # the reduction, named
        for seed in range(seeds):
            for s in base:
                config = _config_meta(pattern, verifier, granularity, context)
                samples.append(
                    Sample(
                        id=f"{pattern}.{verifier}.{granularity}.{context}.s{seed}.{s.id}",
                        input=s.input,
                        target=s.target,
                        metadata={**(s.metadata or {}), **config, "mp_seed": seed,
                                  "mp_problem": str(s.id)},
                    )
                )  # fmt: skip
    return samples


def _task(
    samples: list[Sample],
    scorer_: Scorer,
    solver_args: dict[str, Any],
    metadata: dict[str, Any],
) -> Task:
    return Task(
        dataset=MemoryDataset(samples),
        solver=[bind_sample(), mas_search(**solver_args)],
        scorer=scorer_,
        metadata={"suite": "mas-prove", "reconstructed": RECONSTRUCTED, **metadata},
    )


def raise_usage(message: str) -> None:
    """A usage error prefixed with the suite's name."""
    raise HarnessUsageError(f"mas-prove: {message}")


# defaults that differ by benchmark: the chain runs the whole grid with tiny-arith's settings,
# AIME and GAIA ("qa") a 2-agent debate, unverified and judge-verified (spec §5.4)
BENCHMARK_DEFAULTS: dict[str, dict[str, Any]] = {
    "chain": dict(patterns="single,debate,refine,orchestrator,workflow",
                  verifiers="none,oracle,random,majority,reward,prm,judge",
                  temperature=1.5, max_tokens=4, agents=3),
    "qa": dict(patterns="debate", verifiers="none,judge", temperature=None, max_tokens=None,
                 agents=2),
}  # fmt: skip


@task
@checked_args(
    ranges=dict(
        n=count(1_000),
        problems=count(1_000_000),
        min_steps=count(1_000),
        max_steps=count(1_000),
        agents=count(1_000),
        rounds=count(1_000),
        judge_max_tokens=count(1_000_000),
        verifier_timeout=positive(86_400),
    )
)
def mas_prove(
    benchmark: Literal["chain", "aime2024", "aime2025", "gaia"] = "chain",
    preset: Literal["default", "full"] = "default",
    patterns: str | None = None,
    verifiers: str | None = None,
    granularities: str = "agent,iteration",
    contexts: str | None = None,
    n: int = 3,
    problems: int | None = None,
    seeds: int | None = None,
    seed: int = 0,
    min_steps: int = 3,
    max_steps: int = 6,
    temperature: float | None = None,
    max_tokens: int | None = None,
    agents: int | None = None,
    rounds: int = 2,
    aggregate: Literal["vote", "judge"] = "vote",
    judge_model: str = "scripted/judge",
    judge_max_tokens: int | None = None,
    judge_args: dict[str, Any] | None = None,
    reward_model: str = "local/tiny-arith",
    prm_reduction: Reduction = "min",
    summarizer: str | None = None,
    summary_mode: SummaryMode = "enforce",
    verifier_timeout: float = 120.0,
    extraction: AimeExtraction = "lenient",
    data_dir: str | None = None,
    skip_bad_rows: bool = False,
) -> Task:
    """Every pattern x verifier x granularity (x context), one sample per problem and seed.

    Args:
        benchmark: chain (seeded arithmetic chains), aime2024, aime2025, or gaia (the user's
            own copy under `--data-dir`; see `gaia.py`).
        preset: `default` (8 problems, 2 seeds, raw context) or `full` (20 problems, 3 seeds,
            every context strategy); AIME takes every problem and 1 seed unless told.
        patterns: MAS patterns, from single, debate, refine, orchestrator, workflow (default:
            all for the chain, debate for AIME).
        verifiers: From none, oracle, random, majority, reward, prm, judge (default: all for the
            chain, none and judge for AIME).
        granularities: agent and/or iteration.
        contexts: Context strategies (raw, none, summary, summary+step) for the verifiers that
            read context (judge, reward, prm); default: the preset's.
        n: Candidates per search (N, default 3).
        problems: Problems per configuration (chain default: the preset's; AIME: all 30).
        seeds: Replicates of each configuration (default: the preset's; AIME 1).
        seed: Seed of the chains.
        min_steps: Fewest steps in a chain.
        max_steps: Most steps in a chain.
        temperature: The agents' sampling temperature (chain default 1.5, where tiny-arith gets
            about 3 steps in 4 right; AIME: the model's).
        max_tokens: The agents' output cap (chain default 4; AIME: the model's).
        agents: Debate agents, orchestrator workers, workflow Generate operators (chain 3,
            AIME 2).
        rounds: Debate and refinement rounds.
        aggregate: Debate's answer: vote, or judge (an aggregator's call).
        judge_model: The LLM judge (any model spec; the default scripted judge says nothing,
            so it always falls back to the identity ranking: a plumbing check on a CPU).
        judge_max_tokens: Cap on the judge's output.
        judge_args: The judge model's arguments, as JSON (`-T judge_args='{"answer": "..."}'`).
        reward_model: The reward model and PRM: `local/NAME` (its probability of the step) or
            `openai-api/NAME/MODEL` (a server's /pooling route).
        prm_reduction: How the PRM reduces per-step scores: min or prod.
        summarizer: A model that summarises contexts (default: our extractive rule).
        summary_mode: enforce (always summarise) or optional (only long texts).
        verifier_timeout: Seconds before a silent verifier falls back to candidate 0.
        extraction: AIME answers: lenient (MAS-ProVe's rule), lenient_compat (with its quirk),
            strict or boxed_or_int.
        data_dir: Folder holding `aime/aime2024.jsonl` and `aime/aime2025.jsonl`.
        skip_bad_rows: Load the other AIME rows when one is bad.

    """
    kind = "chain" if benchmark == "chain" else "qa"  # AIME and GAIA share their defaults
    defaults = BENCHMARK_DEFAULTS[kind]
    chosen = PRESETS[preset]
    patterns = patterns or defaults["patterns"]
    verifiers = verifiers or defaults["verifiers"]
    agents = agents if agents is not None else defaults["agents"]
    seeds = seeds if seeds is not None else (chosen["seeds"] if kind == "chain" else 1)
    check_counts(n, agents=agents, rounds=rounds, seeds=seeds, min_steps=min_steps)
    if problems is not None and problems < 1:
        raise_usage(f"-T problems must be at least 1, got {problems}")
    if max_steps < min_steps:
        raise_usage(f"-T max_steps ({max_steps}) is below min_steps ({min_steps})")
    if not verifier_timeout > 0:
        raise_usage(
            f"-T verifier_timeout must be a positive number of seconds, got {verifier_timeout}"
        )
    grid_args = {
        "patterns": patterns,
        "verifiers": verifiers,
        "granularities": granularities,
        "contexts": contexts or chosen["contexts"],
    }
    grid = parse_grid(**grid_args)
    if judge_args is not None and not isinstance(judge_args, dict):
        raise_usage(f"-T judge_args must be a JSON object, got {judge_args!r}")
    specs = VerifierSpecs(
        judge_model, reward_model, prm_reduction, judge_max_tokens, dict(judge_args or {})
    )
    # the judge first: it is cheap to make, and a reward model may train on first use
    for name in sorted(grid.verifiers, key=lambda v: v != "judge"):
        build_verifier(name, specs)  # a verifier model that cannot be made stops the run here
    if kind == "chain":
        base = []
        for chain in make_chains(problems or chosen["problems"], seed, min_steps, max_steps):
            record = {
                "id": chain.id,
                "start": chain.start,
                "steps": chain.steps,
                "answer": chain.answer,
            }
            meta = {"mp_chain": record, "mp_chain_steps": len(chain.steps)}
            base.append(
                Sample(id=chain.id, input=chain.text(), target=str(chain.answer), metadata=meta)
            )
        scorer_: Scorer = chain_answer()
    elif benchmark == "gaia":
        base = [
            Sample(id=s.id, input=s.input, target=s.target, metadata={"mp_benchmark": "gaia"})
            for s in gaia_samples(data_dir, skip_bad_rows)[:problems]
        ]
        scorer_ = gaia_exact()
    else:
        year: Literal[2024, 2025] = 2024 if benchmark == "aime2024" else 2025
        base = aime_samples(year, data_dir, skip_bad_rows)[:problems]
        scorer_ = aime_integer(extraction=extraction)
    solver_args = dict(
        n=n, timeout=verifier_timeout,
        temperature=temperature if temperature is not None else defaults["temperature"],
        max_tokens=max_tokens if max_tokens is not None else defaults["max_tokens"],
        agents=agents, rounds=rounds, aggregate=aggregate,
        specs={"judge_model": judge_model, "reward_model": reward_model,
               "prm_reduction": prm_reduction, "judge_max_tokens": judge_max_tokens,
               "judge_args": dict(judge_args or {})},
        summarizer=summarizer, summary_mode=summary_mode, extraction=extraction,
    )  # fmt: skip
    task_meta = {"benchmark": benchmark, "preset": preset, "n": n, "seeds": seeds,
                 "extraction": extraction, **solver_args["specs"]}  # fmt: skip
    samples = _grid_samples(base, grid_args, seeds, prm_reduction)
    return _task(samples, scorer_, solver_args, task_meta)
