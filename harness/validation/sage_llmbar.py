"""SAGE (reconstructed) on LLMBar: do semantic neighbours help find a judge's wrong verdicts.

Each LLMBar item (an instruction and two outputs) has a human label (which output is better) and
four LLM judges' verdicts. For one judge, its verdict is the annotation and a disagreement with the
human label is the error to detect. Scores, higher meaning "the verdict is correct":

- direct (ours; no references): the share of the other three judges that agree with this
  judge's verdict. LLMBar ships verdicts only, no judge probabilities, so this stands in for a
  direct judge score.
- reference-only, label agreement (spec `sage.md` §2, classification case with w = 0):
  similarity-weighted agreement of the verdict with the neighbours' human labels. Labels here are
  positions ("output 1" or "output 2"), not semantic classes, so this is expected near chance;
  it is reported because it is the spec's score.
- reference-only, judge reliability (ours): the similarity-weighted share of the neighbours on
  which the same judge was right, the SimiFeat idea applied to the judge's own track record.
- SAGE blend (the spec's w = 0.5 form with the reliability score): 0.5·direct + 0.5·reliability.

Neighbours: the k = 5 most similar other items of the whole pool (all subsets) by cosine
similarity of all-MiniLM-L6-v2 embeddings of the instruction, ties by index; their human labels
are the trusted references (leave-one-out: an item never references itself). AUROC per subset
with DeLong intervals, and the paired DeLong difference blend − direct ("do neighbours help?").

Run: `python -m harness.validation.sage_llmbar --data-dir ../shared/data` (writes
`docs/validation/sage-llmbar.md`).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness.data import resolve_data_dir
from harness.sage.scoring import similarity_weighted_mean
from harness.validation.llmbar_data import JUDGES, SUBSETS, load_llmbar

K = 5


@dataclass(frozen=True)
class Pool:
    """Every LLMBar item of every subset, in a fixed order."""

    subset: np.ndarray  # (n,) subset name per item
    text: list[str]  # the instruction
    human: np.ndarray  # (n,) 1 when output 1 is better
    verdicts: dict[str, np.ndarray]  # judge -> (n,) verdicts (nulls as 0)


def load_pool(data_dir: str | None) -> Pool:
    """All subsets, with the four judges' verdicts."""
    root = resolve_data_dir(data_dir)
    subsets, texts, human = [], [], []
    verdicts: dict[str, list[np.ndarray]] = {j: [] for j in JUDGES}
    for s in SUBSETS:
        rows = json.loads((Path(str(root)) / "judges" / "llmbar" / s / "dataset.json").read_text())
        texts += [str(r["input"]) for r in rows]
        subsets += [s] * len(rows)
        first = None
        for j in JUDGES:
            v = load_llmbar(s, j, data_dir)
            first = v.human if first is None else first
            verdicts[j].append(v.judge_verdict)
        assert first is not None
        human.append(first)
    return Pool(
        np.array(subsets),
        texts,
        np.concatenate(human),
        {j: np.concatenate(v) for j, v in verdicts.items()},
    )


def judge_scores(
    pool: Pool, judge: str, nbr: np.ndarray, sims: np.ndarray
) -> dict[str, np.ndarray]:
    """The four scores of the module docstring, for one judge."""
    v = pool.verdicts[judge]
    others = [pool.verdicts[o] for o in JUDGES if o != judge]
    correct = (v == pool.human).astype(float)
    direct = np.mean([o == v for o in others], axis=0)
    reliability = similarity_weighted_mean(correct[nbr], sims)
    return {
        "direct": direct,
        "label agreement": similarity_weighted_mean(
            (pool.human[nbr] == v[:, None]).astype(float), sims
        ),
        "reliability": reliability,
        "blend": 0.5 * direct + 0.5 * reliability,
    }


def _fmt(ci: object | None) -> str:
    if ci is None:
        return "–"
    return f"{ci.estimate:.3f} [{ci.low:.3f}, {ci.high:.3f}]"  # type: ignore[attr-defined]


def build_table(pool: Pool, nbr: np.ndarray, sims: np.ndarray) -> list[list[str]]:
    """One row per judge and subset (and the pooled items)."""
    from harness.stats import delong, delong_paired, holm_adjusted, rejects

    alpha = 0.05  # the table's family-wise error rate; "significant" is Holm p <= alpha

    rows: list[list[str]] = []
    paired: list[tuple[int, float, float]] = []  # row, raw p, estimate
    for judge in JUDGES:
        scores = judge_scores(pool, judge, nbr, sims)
        error = (pool.verdicts[judge] != pool.human).astype(int)
        for subset in [*SUBSETS, "all"]:
            m = np.ones(len(error), bool) if subset == "all" else pool.subset == subset
            e = error[m]
            row = [judge, subset, str(int(m.sum())), str(int(e.sum()))]
            if e.sum() < 2 or e.sum() > len(e) - 2:
                rows.append(row + ["–"] * 5 + ["too few errors or correct verdicts"])
                continue
            cis = {n: delong(-s[m], e) for n, s in scores.items()}
            d = delong_paired(-scores["blend"][m], -scores["direct"][m], e)
            paired.append((len(rows), d.p_value, d.estimate))
            rows.append(
                row
                + [_fmt(cis[n]) for n in ("direct", "label agreement", "reliability", "blend")]
                + [f"{d.estimate:+.3f} [{d.low:+.3f}, {d.high:+.3f}], p {d.p_value:.3g}"]
            )
    adjusted = holm_adjusted([p for _, p, _ in paired], alpha)
    for (i, p, est), p_holm in zip(paired, adjusted, strict=True):
        effect = "help" if est > 0 else "hurt"
        if rejects(p_holm, alpha):
            verdict = f"{effect} (Holm p {p_holm:.3g})"
        elif rejects(p, alpha):
            verdict = f"{effect} (raw p only; Holm p {p_holm:.2g})"
        else:
            verdict = "no clear effect"
        rows[i][-1] += f", Holm p {p_holm:.3g}"
        rows[i].append(verdict)
    return rows


def main() -> None:
    """Compute the table and write docs/validation/sage-llmbar.md."""
    from harness.sage.retrieval import SentenceEmbedder, knn

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("-o", "--output", default="docs/validation/sage-llmbar.md")
    args = parser.parse_args()
    pool = load_pool(args.data_dir)
    emb = SentenceEmbedder().encode(pool.text)
    found = knn(emb, emb, K, exclude_self=True)
    rows = build_table(pool, found.indices, found.similarities)
    head = ["judge", "subset", "n", "errors", "AUROC direct (other judges agree)",
            "AUROC ref-only: label agreement", "AUROC ref-only: judge reliability",
            "AUROC SAGE blend", "blend − direct (paired DeLong)", "neighbours"]  # fmt: skip
    lines = [
        "# SAGE (reconstructed) on LLMBar: do semantic neighbours help find a judge's errors?",
        "",
        "Written by `python -m harness.validation.sage_llmbar --data-dir ../shared/data`; the",
        "scores and their provenance are in that module's docstring. An error is a judge verdict",
        "that disagrees with the human label; AUROC ranks errors by minus the score (0.5 is",
        f"chance). Neighbours: k = {K} most similar other items of the whole pool",
        "(all-MiniLM-L6-v2 on the instruction), their human labels as trusted references",
        "(leave-one-out). 95% DeLong intervals; 'help'/'hurt' when the paired DeLong test of",
        "blend − direct is significant after Holm's correction over all rows of the table",
        "('(raw p only)' when only the uncorrected p is at or below 0.05).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
