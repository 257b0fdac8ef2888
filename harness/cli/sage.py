"""`harness sage score`: SAGE (reconstructed) error detection on an annotated JSONL file."""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import click
import numpy as np

from harness.errors import HarnessUsageError, exit_on_usage_error

MARK = "harness sage score"  # each -o row's first key: a file that starts so is ours to replace


def _output_file(path: str, force: bool) -> Path:
    """The -o file, checked before any work by the rule every output file follows.

    A link, a folder, a device (/dev/full), a FIFO, a log, a folder that cannot be written
    (/proc) or a file the harness did not write (without --force) is a one-line error.
    """
    from harness.output_paths import data_file

    out = data_file(path, "-o", force=force, mark=MARK)
    try:
        with tempfile.TemporaryFile(dir=out.parent):  # root passes os.access where it cannot
            pass
    except OSError as ex:
        raise HarnessUsageError(
            f"-o '{path}' cannot be written ({ex.strerror or ex}); name a writable place"
        ) from None
    return out


@click.group("sage")
def sage() -> None:
    """Detect wrong annotations with semantic-neighbour references (SAGE, reconstructed)."""


def _num(x: float) -> float | None:
    return None if isinstance(x, float) and math.isnan(x) else round(float(x), 6)


@sage.command("score")
@click.option("--data", "data_path", required=True, help='JSONL {"id","text","annotation",'
              '"label_correct"?}.')  # fmt: skip
@click.option("--k", type=int, default=5, show_default=True, help="References per item.")
@click.option(
    "--references",
    type=click.Choice(["verified", "all"]),
    default="verified",
    show_default=True,
    help="verified: only items labelled correct serve as references; all: every other item.",
)
@click.option("--judge", default=None, help="Judge model spec; without it, reference-only.")
@click.option("-M", "model_args", multiple=True, metavar="KEY=VALUE", help="Judge model argument.")
@click.option(
    "--embedder",
    default="minilm",
    show_default=True,
    help="minilm (all-MiniLM-L6-v2, offline), hashing (character n-grams), or a model path.",
)
@click.option("-o", "--output", default=None, help="Write per-item scores as JSONL here.")
@click.option("--force", is_flag=True, help="Replace an -o file the harness did not write.")
@click.option("--log-dir", default="logs/sage", show_default=True, help="Judge-call logs.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object.")
@exit_on_usage_error
def score(
    data_path: str,
    k: int,
    references: str,
    judge: str | None,
    model_args: tuple[str, ...],
    embedder: str,
    output: str | None,
    force: bool,
    log_dir: str,
    as_json: bool,
) -> None:
    """Score every annotation; print AUROC with its DeLong interval when labels are present."""
    from harness.kv_args import parse_kv
    from harness.sage.retrieval import HashingEmbedder, SentenceEmbedder
    from harness.sage.scoring import (
        check_k,
        eligible_references,
        neighbours,
        read_items,
        reference_only_scores,
    )
    from harness.stats import delong, delong_paired

    out = _output_file(output, force) if output is not None else None
    if judge:  # a judge that cannot start is named before any work
        from harness.eval import build_models

        build_models((judge,), parse_kv(model_args, "-M"), None)
    items = read_items(data_path)
    ref_idx = eligible_references(items, references)  # type: ignore[arg-type]
    check_k(k, len(ref_idx), references)  # type: ignore[arg-type]
    model = HashingEmbedder() if embedder == "hashing" else SentenceEmbedder(
        None if embedder == "minilm" else embedder
    )  # fmt: skip
    emb = model.encode([it.text for it in items])
    nbr_idx, nbr_sim = neighbours(emb, ref_idx, k)
    ref_only = reference_only_scores([it.annotation for it in items], nbr_idx, nbr_sim)
    scores: dict[str, np.ndarray] = {"reference_only": ref_only}
    judged = None
    if judge:
        from harness.sage.judge import judge_scores

        judged = judge_scores(
            items,
            nbr_idx,
            judge,
            model_args=parse_kv(model_args, "-M"),
            log_dir=log_dir,
            display="none" if as_json else None,  # --json: stdout is the JSON object alone
        )
        scores["direct"] = judged.direct
        scores["sage"] = judged.anchored.mean(axis=1)
    result: dict[str, Any] = {
        "method": "SAGE (reconstructed)",
        "n": len(items),
        "k": k,
        "references": references,
        "embedder": embedder,
    }
    labelled = [i for i, it in enumerate(items) if it.label_correct is not None]
    is_error = np.array([1 - int(items[i].label_correct or 0) for i in labelled])
    result["n_labelled"] = len(labelled)
    result["n_errors"] = int(is_error.sum()) if labelled else 0
    if judged is not None:
        result["prompt_version"] = judged.prompt_version
        result["judge_log"] = judged.log
    if labelled and 0 < is_error.sum() < len(is_error):
        idx = np.array(labelled)
        for name, s in scores.items():
            finite = s[idx][np.isfinite(s[idx])]
            if finite.size < len(idx) or np.ptp(finite) == 0:
                why = "some scores are undefined" if finite.size < len(idx) else "all tied"
                result[f"auroc_{name}"] = {"estimate": None, "note": f"not estimable: {why}"}
                continue
            ci = delong(-s[idx], is_error)
            result[f"auroc_{name}"] = {"estimate": _num(ci.estimate), "ci_low": _num(ci.low),
                                       "ci_high": _num(ci.high), "method": "delong"}  # fmt: skip
        if judged is not None:
            from harness.sage.theory import estimate_factors

            paired = delong_paired(-scores["sage"][idx], -scores["direct"][idx], is_error)
            result["sage_minus_direct"] = {"estimate": _num(paired.estimate),
                                           "ci_low": _num(paired.low), "ci_high": _num(paired.high),
                                           "p": _num(paired.p_value)}  # fmt: skip
            est = estimate_factors(scores["direct"][idx], judged.anchored[idx], is_error)
            result["factors"] = {
                "mu1": _num(est.mu1), "mu0": _num(est.mu0), "sigma1": _num(est.sigma1),
                "sigma0": _num(est.sigma0), "delta1": _num(est.delta1),
                "delta0": _num(est.delta0), "rho": _num(est.rho),
                "z_dir": _num(est.factors.z_dir), "shift_factor": _num(est.factors.shift_factor),
                "averaging_factor": _num(est.factors.averaging_factor),
                "predicted_auroc_sage": _num(est.factors.auroc_sage),
                "observed_auroc_sage": _num(est.observed_auroc_sage),
            }  # fmt: skip
    elif labelled:
        result["auroc_note"] = "AUROC needs both correct and wrong labelled items"
    if out is not None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        with open(os.open(out, flags, 0o644), "w", encoding="utf-8") as f:  # never via a link
            for i, it in enumerate(items):
                row = {"written_by": MARK, "id": it.id,
                       **{name: _num(s[i]) for name, s in scores.items()}}  # fmt: skip
                row["neighbours"] = [items[int(j)].id for j in nbr_idx[i]]
                f.write(json.dumps(row) + "\n")
    if as_json:
        click.echo(json.dumps(result, indent=1))
        return
    click.echo(f"SAGE (reconstructed): {len(items)} items, k={k}, references={references}")
    for name in scores:
        a = result.get(f"auroc_{name}")
        if a and a.get("estimate") is None:
            click.echo(f"  AUROC {name:15s} {a.get('note', 'not estimable')}")
        elif a:
            click.echo(f"  AUROC {name:15s} {a['estimate']:.3f} "
                       f"[{a['ci_low']:.3f}, {a['ci_high']:.3f}] (DeLong)")  # fmt: skip
    if "sage_minus_direct" in result:
        d = result["sage_minus_direct"]
        click.echo(f"  SAGE - direct         {d['estimate']:+.3f} [{d['ci_low']:+.3f}, "
                   f"{d['ci_high']:+.3f}], p = {d['p']:.3g} (paired DeLong)")  # fmt: skip
        f = result["factors"]
        click.echo(
            f"  factors: z_dir {f['z_dir']}, shift x{f['shift_factor']}, averaging "
            f"x{f['averaging_factor']} (rho {f['rho']}); predicted AUROC "
            f"{f['predicted_auroc_sage']} vs observed {f['observed_auroc_sage']}"
        )
    if "auroc_note" in result:
        click.echo(f"  {result['auroc_note']}")
    if not labelled:
        click.echo("  no label_correct in the data: scores only (see -o)")
