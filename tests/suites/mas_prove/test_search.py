"""Spec §5.3: the search with scripted candidates and verifiers, and the toy model by simulation."""

import math
import random

import anyio
import numpy as np
import pytest

from harness.suites.mas_prove.ranking import toy_step_accuracy
from harness.suites.mas_prove.search import (
    REFUSAL,
    Outcome,
    Verdict,
    VerifyRequest,
    parallel_search,
)
from harness.suites.mas_prove.verifiers import (
    MajorityVerifier,
    OracleVerifier,
    RandomVerifier,
)


def _view(key: str):
    async def view(outcomes):
        answers = tuple(o.answer for o in outcomes)
        return VerifyRequest(
            task_type="math",
            question="q",
            context="",
            candidates=tuple(o.text for o in outcomes),
            answers=answers,
            steps=answers,
            step_prompt="1+1=",
            prior_steps=(),
            correct=tuple(a == "right" for a in answers),
            key=key,
        )

    return view


def _candidates(p: float, rng: random.Random):
    async def make() -> Outcome:
        answer = "right" if rng.random() < p else "wrong"
        return Outcome(answer, answer)

    return make


def _kept_rate(verifier, p: float, searches: int, n: int = 3, seed: int = 0) -> float:
    rng = random.Random(seed)

    async def main() -> float:
        kept = 0
        for i in range(searches):
            out, _ = await parallel_search(
                _candidates(p, rng), n=n, verifier=verifier, view=_view(f"s{i}"),
                where="w", granularity="agent",
            )  # fmt: skip
            kept += out.answer == "right"
        return kept / searches

    return anyio.run(main)


def _within_3se(observed: float, expected: float, n: int) -> None:
    se = math.sqrt(expected * (1 - expected) / n)
    assert abs(observed - expected) <= 3 * se, (observed, expected, se)


@pytest.mark.parametrize("p", [0.3, 0.6])
def test_the_oracle_keeps_a_right_step_with_probability_one_minus_all_wrong(p):
    searches = 3000  # 1000 three-step tasks
    _within_3se(_kept_rate(OracleVerifier(), p, searches), 1 - (1 - p) ** 3, searches)


@pytest.mark.parametrize("p", [0.3, 0.6])
def test_a_random_verifier_keeps_a_right_step_with_probability_p(p):
    searches = 3000
    _within_3se(_kept_rate(RandomVerifier(), p, searches, seed=1), p, searches)


class _SkilledVerifier:
    """Puts a right candidate first with probability a when the set is mixed (the toy model)."""

    name = "toy"

    def __init__(self, a: float, seed: int) -> None:
        self.a = a
        self.rng = random.Random(seed)

    async def rank(self, request: VerifyRequest) -> Verdict:
        right = [i for i, c in enumerate(request.correct) if c]
        wrong = [i for i, c in enumerate(request.correct) if not c]
        if right and wrong:
            first = right if self.rng.random() < self.a else wrong
            rest = [i for i in range(len(request.correct)) if i != first[0]]
            return Verdict((first[0], *rest))
        return Verdict(tuple(range(len(request.correct))))


def test_the_search_with_a_skilled_verifier_follows_the_toy_formula():
    searches = 6000
    rate = _kept_rate(_SkilledVerifier(0.8, seed=2), 0.6, searches, seed=3)
    _within_3se(rate, toy_step_accuracy(0.6, 0.8, 3), searches)


@pytest.mark.long  # about 100 s at load 2: outside the default run
def test_the_toy_formula_holds_over_100k_simulated_tasks():
    """Spec §5.3: 100k three-step tasks through `parallel_search` itself, N = 3, p = 0.6,
    a = 0.8 -> 0.792 a step and 0.792^3 = 0.4968 a task (about 2-3 minutes here: 300k
    searches). Each task's steps run in order; tasks run 500 at a time."""
    tasks, steps, n, p, a = 100_000, 3, 3, 0.6, 0.8
    rng = random.Random(4)
    verifier = _SkilledVerifier(a, seed=5)
    view = _view("toy")

    async def one_task() -> list[bool]:
        kept = []
        for _ in range(steps):
            out, record = await parallel_search(
                _candidates(p, rng), n=n, verifier=verifier, view=view,
                where="toy", granularity="agent",
            )  # fmt: skip
            kept.append(out.answer == "right")
        return kept

    async def main() -> list[list[bool]]:
        results: list[list[bool]] = []
        for start in range(0, tasks, 500):

            async def run(i: int, into: list) -> None:
                into[i] = await one_task()

            batch: list = [None] * min(500, tasks - start)
            async with anyio.create_task_group() as group:
                for i in range(len(batch)):
                    group.start_soon(run, i, batch)
            results += batch
        return results

    kept = np.array(anyio.run(main))  # (tasks, steps)
    assert kept.shape == (tasks, steps)
    _within_3se(kept.mean(), 0.792, tasks * steps)
    _within_3se(kept.all(axis=1).mean(), 0.4968, tasks)
    assert toy_step_accuracy(p, a, n) == pytest.approx(0.792)


def test_a_failing_candidate_becomes_the_refusal_placeholder_and_is_ranked():
    calls = iter(range(3))

    async def make() -> Outcome:
        if next(calls) == 1:
            raise RuntimeError("the model fell over")
        return Outcome("right", "right")

    async def main():
        return await parallel_search(
            make, n=3, verifier=OracleVerifier(), view=_view("k"), where="w", granularity="agent"
        )

    kept, record = anyio.run(main)
    assert kept.answer == "right"
    assert record.candidates.count(REFUSAL) == 1
    failed = [f for f in record.failed if f]
    assert len(failed) == 1 and "fell over" in failed[0]
    assert record.ranking[-1] == record.candidates.index(REFUSAL)  # ranked, and last


def test_a_verifier_that_times_out_keeps_candidate_zero():
    class Slow:
        name = "slow"

        async def rank(self, request: VerifyRequest) -> Verdict:
            await anyio.sleep(30)
            return Verdict((2, 1, 0))

    answers = iter(["wrong", "right", "right"])

    async def make() -> Outcome:
        a = next(answers)
        return Outcome(a, a)

    async def main():
        return await parallel_search(
            make, n=3, verifier=Slow(), view=_view("k"), where="w", granularity="agent",
            timeout=0.05,
        )  # fmt: skip

    kept, record = anyio.run(main)
    assert record.chosen == 0 and kept.answer == "wrong"
    assert "did not answer within" in record.fallback


def test_a_verifier_that_raises_or_returns_a_non_permutation_keeps_candidate_zero():
    class Broken:
        name = "broken"

        def __init__(self, order):
            self.order = order

        async def rank(self, request: VerifyRequest) -> Verdict:
            if self.order is None:
                raise ConnectionError("judge unreachable")
            return Verdict(self.order)

    async def make() -> Outcome:
        return Outcome("x", "x")

    for verifier, why in ((Broken(None), "unreachable"), (Broken((1, 1, 0)), "permutation")):

        async def main(verifier=verifier):
            return await parallel_search(
                make, n=3, verifier=verifier, view=_view("k"), where="w", granularity="agent"
            )

        _, record = anyio.run(main)
        assert record.chosen == 0 and why in record.fallback


def test_majority_ranks_by_shared_answers_and_the_record_keeps_everything():
    answers = iter(["7", "9", "9"])

    async def make() -> Outcome:
        a = next(answers)
        return Outcome(f"text {a}", a)

    async def main():
        return await parallel_search(
            make, n=3, verifier=MajorityVerifier(), view=_view("k"), where="step 1, worker",
            granularity="agent",
        )  # fmt: skip

    kept, record = anyio.run(main)
    assert kept.answer == "9" and record.chosen == 1
    data = record.as_dict()
    assert data["candidates"] == ["text 7", "text 9", "text 9"]
    assert data["verifier_input"]["candidates"] == ["text 7", "text 9", "text 9"]
    assert data["ranking"] == [1, 2, 0] and data["verifier"] == "majority"
    assert data["detail"]["votes"] == [1.0, 2.0, 2.0]


def test_n_below_one_is_refused():
    async def main():
        return await parallel_search(
            _candidates(0.5, random.Random(0)), n=0, verifier=OracleVerifier(), view=_view("k"),
            where="w", granularity="agent",
        )  # fmt: skip

    with pytest.raises(ValueError, match="at least 1"):
        anyio.run(main)
