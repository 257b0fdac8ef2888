"""ImgCoT's low-likelihood step selection with ℓ from SmolLM2-135M, against the suite's scorer.

The rule is the suite's (`harness.suites.imgcot.steps`): ℓ_j is step j's mean token
log-probability, teacher-forced on the question and the previous steps, and the m = 1 step with
the lowest ℓ is kept. Here ℓ comes from `local/smollm2-135m` through the `local/` calibrator
(`harness.suco.calibrator_local.LocalCalibrator.continuation_logprobs`, the teacher-forced path
of the model-adapter layer), with the question as one user turn of the model's chat template and
the steps as the assistant's lines, one per line as the suite renders them. The suite's own
scorer is its explicit-CoT reasoner trained on the seed's 8,000 problems (`training_step_scores`).

Both scorers see the first n training problems of the seed. Printed: the step position each
one keeps, their agreement (with the agreement their marginals give by chance), what the kept
steps have in common (surface form, operation), and a check that ℓ carries the arithmetic at
all: for one random step per problem, the share where the true step has a higher ℓ than the same
step with its result digit changed (0.5 is blind).

    python -m harness.validation.imgcot_smollm2 [--n 200] [--seed 0] [--no-trained]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

from harness.stats import Interval, wilson
from harness.suites.imgcot.problems import STEPS, Problem, make_problems
from harness.suites.imgcot.steps import select_steps, step_scores

PROMPT = "Compute step by step; every result is taken mod 10. {question}"


def question_text(problem: Problem) -> str:
    """The question as text: `3 + 4 × 2 − 5`."""
    return " ".join(problem.question)


def step_text(step: Sequence[str]) -> str:
    """A step as the suite renders it: its tokens with no spaces, `3+4=7` or `7=3+4`."""
    return "".join(step)


def step_pairs(rendered_prompt: str, problem: Problem) -> list[tuple[str, str]]:
    """(context, continuation) for each step: the prompt and the previous steps, then the step."""
    lines = [step_text(s) for s in problem.steps]
    return [
        (rendered_prompt + "".join(f"{x}\n" for x in lines[:j]), lines[j]) for j in range(STEPS)
    ]


def corrupt(problem: Problem, j: int, rng: random.Random) -> Problem:
    """The problem with step j's result digit changed (later steps untouched)."""
    step = problem.steps[j]
    at = 4 if step[3] == "=" else 0  # "x op b = y" or "y = x op b"
    wrong = str((int(step[at]) + rng.randint(1, 9)) % 10)
    bad = tuple(wrong if i == at else t for i, t in enumerate(step))
    return Problem(problem.question, (*problem.steps[:j], bad, *problem.steps[j + 1 :]),
                   problem.answer)  # fmt: skip


@dataclass(frozen=True)
class Scored:
    """ℓ per step of each problem, and of each problem's corrupted step."""

    ell: tuple[tuple[float, ...], ...]  # (n, 3)
    true_vs_corrupt: tuple[tuple[float, float], ...]  # ℓ of the chosen step, true and corrupted
    seconds: float  # wall time of the scoring


def smollm2_scores(problems: list[Problem], picks: list[tuple[int, Problem]]) -> Scored:
    """ℓ from SmolLM2-135M-Instruct through the `local/` calibrator."""
    from harness.suco.calibrator_local import LocalCalibrator

    cal = LocalCalibrator("smollm2-135m", batch_size=16)
    start = time.perf_counter()
    pairs = []
    for p in problems:
        pairs += step_pairs(cal.render_prompt(PROMPT.format(question=question_text(p))), p)
    bad = [step_pairs(cal.render_prompt(PROMPT.format(question=question_text(q))), q)[j]
           for j, q in picks]  # fmt: skip
    lps = cal.continuation_logprobs(pairs + bad)
    ell = [step_scores(lps[STEPS * i : STEPS * (i + 1)]) for i in range(len(problems))]
    tvc = [(ell[i][j], step_scores([lps[STEPS * len(problems) + i]])[0])
           for i, (j, _) in enumerate(picks)]  # fmt: skip
    return Scored(tuple(ell), tuple(tvc), time.perf_counter() - start)


def trained_scores(seed: int, problems: list[Problem], picks: list[tuple[int, Problem]]) -> Scored:
    """ℓ from the suite's explicit-CoT reasoner of this seed (trained here if not cached)."""
    import torch

    from harness.suites.imgcot.problems import ANS, STEP_LEN, encode
    from harness.suites.imgcot.runs import explicit_model, questions
    from harness.suites.imgcot.task import PRESETS

    start = time.perf_counter()
    settings = tuple(sorted(PRESETS["paper"].items()))
    model = explicit_model(seed, settings)
    spans = [range(j * (STEP_LEN + 1), j * (STEP_LEN + 1) + STEP_LEN) for j in range(STEPS)]

    def ell(ps: list[Problem]) -> list[tuple[float, ...]]:
        text = torch.tensor([[*encode(p.cot), ANS] for p in ps])  # (N, 18)
        with torch.no_grad():
            _, logits = model(questions(ps), text)  # (N, 19, V): position t predicts text[t]
            logp = torch.log_softmax(logits[:, :-1], -1).gather(-1, text.unsqueeze(-1))[..., 0]
        lp = logp.numpy()
        return [step_scores([lp[i, list(s)] for s in spans]) for i in range(len(ps))]

    good = ell(problems)
    bad = ell([q for _, q in picks])
    tvc = [(good[i][j], bad[i][j]) for i, (j, _) in enumerate(picks)]
    return Scored(tuple(good), tuple(tvc), time.perf_counter() - start)


def share(hits: int, n: int) -> str:
    """`k/n = p [lo, hi]` with a Wilson interval."""
    iv: Interval = wilson(hits, n)
    return f"{hits}/{n} = {iv.text()}"


def describe(name: str, kept: list[int], problems: list[Problem], scored: Scored) -> None:
    """Print what one scorer keeps."""
    n = len(kept)
    pos = " ".join(f"step {k + 1}: {share(sum(x == k for x in kept), n)};" for k in range(STEPS))
    backward = sum(problems[i].steps[k][1] == "=" for i, k in enumerate(kept))
    times = sum("×" in problems[i].steps[k] for i, k in enumerate(kept))
    tvc = sum(t > c for t, c in scored.true_vs_corrupt)
    mean = sum(sum(e) for e in scored.ell) / (STEPS * n)
    print(f"{name} ({scored.seconds:.0f} s): mean ℓ {mean:.3f}")
    print(f"  kept position: {pos}")
    print(f"  kept step in the form 'y=x op b': {share(backward, n)} (all steps: 0.5 by design)")
    print(f"  kept step is a '×' step: {share(times, n)} (all steps: 1/3 by design)")
    print(f"  true step's ℓ above the corrupted one's: {share(tvc, len(scored.true_vs_corrupt))}")


def main(argv: list[str] | None = None) -> None:
    """Score, select and compare."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="training problems to score (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="the suite's seed (default 0)")
    ap.add_argument("--no-trained", action="store_true", help="skip the suite's trained scorer")
    a = ap.parse_args(argv)
    train, _ = make_problems(a.seed, 8000, 1)
    problems = train[: a.n]
    rng = random.Random(f"imgcot-smollm2-corrupt-{a.seed}")
    picks = []
    for p in problems:
        j = rng.randrange(STEPS)
        picks.append((j, corrupt(p, j, rng)))
    smol = smollm2_scores(problems, picks)
    kept_s = [select_steps(e, 1, "lowest")[0] for e in smol.ell]
    print(f"seed {a.seed}, first {a.n} training problems, m = 1, rule 'lowest'")
    describe("SmolLM2-135M", kept_s, problems, smol)
    if a.no_trained:
        return
    trained = trained_scores(a.seed, problems, picks)
    kept_t = [select_steps(e, 1, "lowest")[0] for e in trained.ell]
    describe("suite's explicit-CoT reasoner", kept_t, problems, trained)
    agree = sum(x == y for x, y in zip(kept_s, kept_t, strict=True))
    chance = sum((kept_s.count(k) / a.n) * (kept_t.count(k) / a.n) for k in range(STEPS))
    print(f"same step kept by both: {share(agree, a.n)}; by chance from the marginals "
          f"{chance:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
