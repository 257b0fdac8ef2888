"""The calibrated judge with a real judge: SmolLM2-135M-Instruct judges LLMBar pairs.

SmolLM2 (`local/smollm2-135m`) is asked about a seeded sample of LLMBar pairs (`--n`, the first
n of a numpy-seed-`--seed` permutation of all subsets' pairs, so a larger n extends a smaller
one) with `sage_smollm2`'s prompt and calls (`judge_items`: the SAGE judge, prompt
`sage-judge-v1`, "Output (x) is better." naming output 1, P(Yes) from the first token's
log-probabilities), in both presentation orders: output 1 shown first ("a-first") and second
("b-first"). Its binary verdict "output 1 is better" is P(Yes) > 0.5 in one order, or the mean
P(Yes) of the two orders > 0.5 ("mean of orders"); a P(Yes) of exactly 0.5 (no Yes or No read)
counts as 0, as LLMBar's null verdicts do in `llmbar_data`.

The calibrated judge's mapping (as `llmbar_report`): truth Z = [gold label == 1], verdict
Z' = [judge says output 1]; q0 = P(Z' = 0 | Z = 0) (specificity), q1 = P(Z' = 1 | Z = 1)
(sensitivity), J = q0 + q1 - 1, and the corrected quantity theta is the share of pairs whose
output 1 is the gold winner. Per verdict kind the script prints q0, q1 and J on all judged pairs,
then repeats `--splits` random stratified calibration draws (`llmbar_report.replay`: m per class,
default a third of the smaller class; the rest are the test set, the target is their human
theta) and reports the Rogan-Gladen interval's coverage, width and bias, how often the guard
refused (J <= 0 on the draw: `rogan_gladen` raises `CalibrationError`, the `calibrated_judge`
metric gives nan and the report says "label by hand"), the naive Wilson interval's coverage,
and the regime ratio R (`harness.stats.regime_ratio`: the judge route's variance over labelling
the same budget by hand; R >= 1 means label by hand).

SmolLM2's P(Yes) per pair and order is cached in `--out` (default: the harness cache folder's
`judge-smollm2/`), one JSON line per pair, keyed by the pair's index and a hash of its text,
under a header line naming this script; the script appends to its own file and refuses any other.

Run: `python -m harness.validation.judge_smollm2 --data-dir ../shared/data --n 100`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.errors import HarnessUsageError, exit_on_usage_error
from harness.stats import regime_ratio
from harness.validation.llmbar_report import CellResult, replay

WRITER = "harness.validation.judge_smollm2"
ORDERS = ("a-first", "b-first", "mean of orders")


@dataclass(frozen=True)
class JudgeRates:
    """A binary judge's rates against the truth on all judged pairs."""

    n: int
    m0: int  # pairs whose output 2 is the gold winner
    m1: int  # pairs whose output 1 is the gold winner
    q0: float  # specificity
    q1: float  # sensitivity
    youden_j: float  # q0 + q1 - 1
    accuracy: float  # share of pairs where the verdict equals the truth


@dataclass(frozen=True)
class OrderResult:
    """One verdict kind: its rates, its repeated calibration splits and its regime ratio."""

    order: str
    rates: JudgeRates
    splits: CellResult
    ratio: float  # R, `regime_ratio` at the pairs' theta, n = test pairs, m = 2 m labels
    recommendation: str  # its verdict: "use the judge" (R < 1) or "label by hand"


def verdicts(p12: np.ndarray, p21: np.ndarray) -> dict[str, np.ndarray]:
    """Binary "output 1 is better" verdicts from P(Yes) in each order and from their mean."""
    p12, p21 = np.asarray(p12, float), np.asarray(p21, float)
    return {
        "a-first": (p12 > 0.5).astype(int),
        "b-first": (p21 > 0.5).astype(int),
        "mean of orders": ((p12 + p21) / 2 > 0.5).astype(int),
    }


def judge_rates(human: np.ndarray, judge: np.ndarray) -> JudgeRates:
    """q0, q1, J and accuracy of 0/1 verdicts against 0/1 truth (both classes present)."""
    human, judge = np.asarray(human, int), np.asarray(judge, int)
    m1 = int(human.sum())
    m0 = human.size - m1
    if m0 == 0 or m1 == 0:
        raise HarnessUsageError(f"the judged pairs hold one true class only (m0={m0}, m1={m1})")
    q0 = float(np.mean(judge[human == 0] == 0))
    q1 = float(np.mean(judge[human == 1] == 1))
    return JudgeRates(human.size, m0, m1, q0, q1, q0 + q1 - 1, float(np.mean(judge == human)))


def analyse(
    human: np.ndarray, by_order: dict[str, np.ndarray], *, m: int, splits: int, seed: int
) -> list[OrderResult]:
    """Rates, `splits` calibration draws of m per class, and R, for each verdict kind."""
    human = np.asarray(human, int)
    if m < 1 or 2 * m >= human.size or m > min(human.sum(), human.size - human.sum()):
        raise HarnessUsageError(
            f"--m {m} does not fit {human.size} pairs ({int(human.sum())} with output 1 better); "
            "need m per class and a test set left over"
        )
    out = []
    for k, (order, judge) in enumerate(by_order.items()):
        rates = judge_rates(human, judge)
        cell = replay(order, human, np.asarray(judge, int), m, splits, seed + k)
        theta = float(human.mean())
        regime = regime_ratio(theta, rates.q0, rates.q1, n=human.size - 2 * m, m=2 * m)
        out.append(OrderResult(order, rates, cell, regime.ratio, regime.recommendation))
    return out


def to_markdown(results: list[OrderResult]) -> str:
    """One table row per verdict kind."""
    head = (
        "| verdict | n | q0 | q1 | J | accuracy | m per class | splits | refused | RG coverage "
        "| RG width | RG bias | naive coverage | naive width | R (judge / by hand) |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for r in results:
        s, q = r.splits, r.rates
        rows.append(
            f"| {r.order} | {q.n} | {q.q0:.3f} | {q.q1:.3f} | {q.youden_j:+.3f} | "
            f"{q.accuracy:.3f} | {s.m} | {s.draws} | {s.refused} | {s.rg_coverage:.3f} | "
            f"{s.rg_width:.3f} | {s.rg_bias:+.4f} | {s.naive_coverage:.3f} | "
            f"{s.naive_width:.3f} | {r.ratio:.3g} ({r.recommendation}) |\n"
        )
    return head + "".join(rows)


@dataclass(frozen=True)
class VerdictCache:
    """P(Yes) per pair in both orders, in a JSONL file this script wrote (append only)."""

    path: Path
    found: dict[int, tuple[str, float, float]]  # pair -> (text hash, P(Yes) a-first, b-first)

    @classmethod
    def open(cls, folder: str | Path, *, model: str, prompt: str, max_chars: int) -> VerdictCache:
        """Open (or start) the cache file for these settings; refuse a file not written here."""
        from harness.paths import writable_dir

        root = writable_dir(folder, "--out")
        slug = model.replace("/", "_")
        path = root / f"verdicts-{slug}-{prompt}-c{max_chars}.jsonl"
        header = {"writer": WRITER, "model": model, "prompt": prompt, "max_chars": max_chars}
        if not path.exists():
            path.write_text(json.dumps(header) + "\n")
            return cls(path, {})
        lines = path.read_text().splitlines()
        try:
            first = json.loads(lines[0]) if lines else None
        except json.JSONDecodeError:
            first = None
        if first != header:
            raise HarnessUsageError(
                f"'{path}' was not written by {WRITER} with these settings; "
                "name another --out folder (the file is left as it is)"
            )
        found = {}
        for line in lines[1:]:
            row = json.loads(line)
            found[int(row["pair"])] = (str(row["key"]), float(row["a"]), float(row["b"]))
        return cls(path, found)

    def get(self, pair: int, key: str) -> tuple[float, float] | None:
        """The cached (a-first, b-first) P(Yes) of a pair whose text hash is `key`."""
        got = self.found.get(pair)
        return None if got is None or got[0] != key else (got[1], got[2])

    def add(self, rows: dict[int, tuple[str, float, float]]) -> None:
        """Append pairs' (text hash, a-first, b-first) P(Yes)."""
        with self.path.open("a") as f:
            for pair, (key, a, b) in rows.items():
                f.write(json.dumps({"pair": pair, "key": key, "a": a, "b": b}) + "\n")
                self.found[pair] = (key, a, b)


def pair_key(instruction: str, outputs: tuple[str, str]) -> str:
    """A short hash of a pair's text, so a changed data set is not read from the cache."""
    text = json.dumps([instruction, *outputs])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@exit_on_usage_error
def main() -> None:
    """Judge the sample (cached), print the rates and the split replay as markdown."""
    import torch

    from harness.paths import cache_dir
    from harness.sage.judge import PROMPT_VERSION, judge_scores
    from harness.validation.sage_llmbar import load_pool
    from harness.validation.sage_smollm2 import MODEL, _outputs, judge_items

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--n", type=int, default=100, help="pairs to judge")
    parser.add_argument("--seed", type=int, default=0, help="the pair sample's seed")
    parser.add_argument("--splits", type=int, default=200, help="calibration draws")
    parser.add_argument("--m", type=int, default=None, help="calibration pairs per class")
    parser.add_argument("--max-chars", type=int, default=800, help="cut each output at this")
    parser.add_argument("--out", default=None, help="cache folder (default: harness cache)")
    parser.add_argument("--chunk", type=int, default=10, help="pairs per judge run (cached)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--log-dir", default="logs/judge-smollm2")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pool = load_pool(args.data_dir)
    outputs = _outputs(args.data_dir)
    if not 2 <= args.n <= len(outputs):
        raise HarnessUsageError(f"--n must be in [2, {len(outputs)}], got {args.n}")
    drawn = np.random.default_rng(args.seed).permutation(len(outputs))[: args.n]
    chosen = np.sort(drawn)
    keys = {int(i): pair_key(pool.text[int(i)], outputs[int(i)]) for i in chosen}
    out = args.out or cache_dir() / "judge-smollm2"
    cache = VerdictCache.open(out, model=MODEL, prompt=PROMPT_VERSION, max_chars=args.max_chars)
    todo = [i for i in drawn if cache.get(int(i), keys[int(i)]) is None]  # a stopped run: a prefix
    print(f"{len(chosen)} pairs, {len(chosen) - len(todo)} cached in {cache.path}", flush=True)
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(todo), args.chunk):
        part = np.array(todo[start : start + args.chunk])
        items = judge_items(pool, outputs, part, args.max_chars)
        js = judge_scores(items, np.zeros((len(items), 0), int), MODEL, log_dir=args.log_dir,
                          display="none")  # fmt: skip
        two = js.direct.reshape(-1, 2)  # judge_items: order "12" then "21" per pair
        cache.add(
            {
                int(i): (keys[int(i)], float(a), float(b))
                for i, (a, b) in zip(part, two, strict=True)
            }
        )
        done = start + len(part)
        print(f"judged {done}/{len(todo)}: {(time.perf_counter() - wall) / done:.1f} s/pair "
              f"wall, {(time.process_time() - cpu) / done:.1f} s/pair CPU", flush=True)  # fmt: skip
    p = np.array([cache.get(int(i), keys[int(i)]) for i in chosen])
    human = pool.human[chosen]
    small = int(min(human.sum(), human.size - human.sum()))
    m = args.m if args.m is not None else max(1, small // 3)
    results = analyse(human, verdicts(p[:, 0], p[:, 1]), m=m, splits=args.splits, seed=args.seed)
    v = verdicts(p[:, 0], p[:, 1])
    print(
        f"truth: theta = {human.mean():.3f} (output 1 better on {int(human.sum())} of {len(human)})"
    )
    print(f"P(Yes) a-first mean {p[:, 0].mean():.3f} sd {p[:, 0].std():.3f}; b-first mean "
          f"{p[:, 1].mean():.3f} sd {p[:, 1].std():.3f}; same verdict in both orders "
          f"{np.mean(v['a-first'] == v['b-first']):.3f}")  # fmt: skip
    print(to_markdown(results))


if __name__ == "__main__":
    main()
