"""SAGE (reconstructed) with a real judge: SmolLM2-135M-Instruct checks LLMBar judges' verdicts.

On a seeded sample of LLMBar items (`--n`, default 100, drawn with numpy seed `--seed` from all
subsets), each pair is put to the SAGE judge (`harness.sage.judge`, prompt `sage-judge-v1`,
P(Yes) from the first token's log-probabilities) in both presentation orders and with both
annotation naming output 1 ("Output (a) is better" in the given order, "Output (b)" swapped):
2 calls per pair. SmolLM2's preference for output 1 is the mean over the two orders of
P(Yes | output 1 annotated).

For each recorded LLMBar judge (GPT-4, ChatGPT, LLaMA2, PaLM2) the annotation is its verdict and
an error is a verdict that disagrees with the human label. Scores, higher meaning "correct":

- SmolLM2 direct: SmolLM2's preference for the output the verdict names;
- reliability: the reference-only judge-reliability score of `sage_llmbar` (k = 5 MiniLM
  neighbours over the whole pool, leave-one-out);
- SAGE blend: 0.5·SmolLM2 direct + 0.5·reliability.

AUROC of each (errors ranked by minus the score) with DeLong intervals, and the paired DeLong
difference blend − SmolLM2 direct. Outputs longer than `--max-chars` characters are cut (ours,
to bound CPU time; the count is printed).

Run: `python -m harness.validation.sage_smollm2 --data-dir ../shared/data`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from harness.data import resolve_data_dir
from harness.sage.scoring import AnnotatedItem
from harness.validation.llmbar_data import JUDGES, SUBSETS
from harness.validation.sage_llmbar import K, Pool, load_pool
from harness.validation.sage_llmbar import judge_scores as pool_scores

MODEL = "local/smollm2-135m"


def _outputs(data_dir: str | None) -> list[tuple[str, str]]:
    """(output_1, output_2) of every pool item, in `load_pool`'s order."""
    root = Path(str(resolve_data_dir(data_dir)))
    out: list[tuple[str, str]] = []
    for s in SUBSETS:
        rows = json.loads((root / "judges" / "llmbar" / s / "dataset.json").read_text())
        out += [(str(r["output_1"]), str(r["output_2"])) for r in rows]
    return out


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


def judge_items(
    pool: Pool, outputs: list[tuple[str, str]], chosen: np.ndarray, max_chars: int
) -> list[AnnotatedItem]:
    """Two SAGE items per chosen pair: two orders, output 1 annotated as better."""
    items = []
    for i in chosen:
        o1, o2 = (_cut(o, max_chars) for o in outputs[int(i)])
        for order, (a, b) in (("12", (o1, o2)), ("21", (o2, o1))):
            text = f"{pool.text[int(i)]}\n\nOutput (a):\n{a}\n\nOutput (b):\n{b}"
            for names in (1,):  # the original output the annotation names
                shown = "a" if (names == 1) == (order == "12") else "b"
                items.append(
                    AnnotatedItem(f"{i}:{order}:{names}", text, f"Output ({shown}) is better.")
                )
    return items


def preference(direct: np.ndarray) -> np.ndarray:
    """SmolLM2's P(output 1 better) per pair from its 2 P(Yes) values (one per order)."""
    return direct.reshape(-1, 2).mean(axis=1)


def _fmt(ci: object) -> str:
    return f"{ci.estimate:.3f} [{ci.low:.3f}, {ci.high:.3f}]"  # type: ignore[attr-defined]


def main() -> None:
    """Run the judge, print the AUROC table as markdown."""
    from harness.sage.judge import judge_scores
    from harness.sage.retrieval import SentenceEmbedder, knn
    from harness.stats import delong, delong_paired, wilson

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-chars", type=int, default=800)
    parser.add_argument("--log-dir", default="logs/sage-smollm2")
    args = parser.parse_args()
    pool = load_pool(args.data_dir)
    outputs = _outputs(args.data_dir)
    chosen = np.sort(np.random.default_rng(args.seed).choice(len(outputs), args.n, replace=False))
    cut = sum(len(o) > args.max_chars for i in chosen for o in outputs[int(i)])
    items = judge_items(pool, outputs, chosen, args.max_chars)
    t0 = time.perf_counter()
    js = judge_scores(items, np.zeros((len(items), 0), int), MODEL, log_dir=args.log_dir)
    secs = time.perf_counter() - t0
    pref1 = preference(js.direct)
    human = pool.human[chosen]
    emb = SentenceEmbedder().encode(pool.text)
    found = knn(emb, emb, K, exclude_self=True)
    hard = (js.direct > 0.5).astype(int)
    acc = wilson(int(np.sum((pref1 > 0.5) == (human == 1))), len(chosen))
    print(f"{len(items)} judge calls in {secs:.0f} s; {cut} outputs cut at {args.max_chars} chars")
    print(f"log: {js.log}")
    print(f"P(Yes): mean {js.direct.mean():.3f}, sd {js.direct.std():.3f}, >0.5 {hard.mean():.3f}")
    print(f"SmolLM2 as a pairwise judge (pref > 0.5) vs human: {_fmt(acc)} (Wilson)")
    two = js.direct.reshape(-1, 2) > 0.5
    print(f"same verdict in both orders: {np.mean(two[:, 0] == two[:, 1]):.3f}")
    head = ["judge", "n", "errors", "AUROC SmolLM2 direct", "AUROC reliability",
            "AUROC SAGE blend", "blend − direct (paired DeLong)"]  # fmt: skip
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for judge in JUDGES:
        v = pool.verdicts[judge][chosen]
        error = (v != human).astype(int)
        direct = np.where(v == 1, pref1, 1.0 - pref1)
        rel = pool_scores(pool, judge, found.indices, found.similarities)["reliability"][chosen]
        blend = 0.5 * direct + 0.5 * rel
        d = delong_paired(-blend, -direct, error)
        cells = [judge, str(len(error)), str(int(error.sum()))]
        cells += [_fmt(delong(-s, error)) for s in (direct, rel, blend)]
        cells.append(f"{d.estimate:+.3f} [{d.low:+.3f}, {d.high:+.3f}], p {d.p_value:.3g}")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
