"""The text-watermark experiments: false positives, power against the model, and the selection.

Each function is one run of the `detect` or `select` task, run where the training pool says
(a thread, a process, a Ray task), and returns a JSON-ready dict for the sample's metadata.
Texts are 256 tokens: one source start token, then 255 sampled from the teacher; positions
t >= h are scored. Every text gets a fresh key (the guarantee of the exact test is over keys).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from harness.suites.provenance.bases import spec_of, teacher_of
from harness.suites.provenance.detect import (
    binomial_p,
    critical_count,
    green_sequences,
    scored_positions,
)
from harness.suites.provenance.generate import Generated, generate
from harness.suites.provenance.greenlist import GreenList
from harness.suites.provenance.power import conditional_power, exact_power
from harness.suites.provenance.selection import CalibrationPositions, select
from harness.suites.provenance.source import SPECIAL, VOCAB, WORDS, make_source
from harness.suites.provenance.watermark import KGWProcessor

H = 2  # context width (ADFP's bigram)
FPR_ALPHAS = (0.001, 0.01, 0.05)


def _teacher(settings: dict[str, Any]) -> Any:
    spec = settings.get("teacher_spec")
    return teacher_of(settings["teacher"], spec_of(spec) if spec else None,
                      settings["source_seed"])  # fmt: skip


def _keys(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64)


def _texts(settings: dict[str, Any], rule: GreenList, keys: np.ndarray, processor: Any,
           seed: int, **extra: Any) -> Generated:  # fmt: skip
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, WORDS, (len(keys), 1))
    return generate(_teacher(settings), starts, settings["length"] - 1, rule, keys, processor,
                    seed=seed + 1, **extra)  # fmt: skip


def _exact_hits(greens: list[np.ndarray], n: int, gamma: float) -> dict[str, Any]:
    """p-values of the first n scored tokens of each text, and hits per alpha."""
    p = [binomial_p(int(g[:n].sum()), int(g[:n].size), gamma) for g in greens]
    return {"texts": len(p), "hits": {str(a): int(sum(x <= a for x in p)) for a in FPR_ALPHAS}}


def _z_hits(greens: list[np.ndarray], n: int, gamma: float) -> dict[str, Any]:
    from scipy import stats

    z_a = {a: stats.norm.isf(a) for a in FPR_ALPHAS}
    z = [(g[:n].sum() - gamma * g[:n].size) / math.sqrt(g[:n].size * gamma * (1 - gamma))
         for g in greens if g[:n].size]  # fmt: skip
    return {"texts": len(z), "hits": {str(a): int(sum(x >= z_a[a] for x in z)) for a in FPR_ALPHAS}}


def low_diversity_fpr(keys: int = 1000, successors: int = 2, length: int = 202,
                      gamma: float = 0.25, seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Unwatermarked low-diversity source text, a fresh key per text: FPR with and without dedup.

    The spec's toy (§3): 2 successors per word, about 70 unique tuples per 200 tokens.
    """
    source = make_source(seed, successors)
    rng = np.random.default_rng(seed + 1)
    texts = source.sample(keys, length, rng)
    key_arr = _keys(rng, keys)
    rule = GreenList(gamma, VOCAB, H, SPECIAL)
    out = {}
    for dedup in (True, False):
        greens = green_sequences(texts, key_arr, rule, dedup=dedup)
        p = np.array([binomial_p(int(g.sum()), g.size, gamma) for g in greens])
        out["dedup" if dedup else "no_dedup"] = {
            "hits": {str(a): int((p <= a).sum()) for a in FPR_ALPHAS},
            "mean_scored": float(np.mean([g.size for g in greens])),
        }
    return {"keys": keys, "successors": successors, "length": length, "gamma": gamma, **out}


def fpr_run(settings: dict[str, Any]) -> dict[str, Any]:
    """Check 1: unwatermarked teacher texts, exact p on the first `fpr_scored` scored tuples."""
    start = time.perf_counter()
    n_texts, n = settings["texts"], settings["fpr_scored"]
    rng = np.random.default_rng(settings["seed"] + 11)
    keys = _keys(rng, n_texts)
    rule = GreenList(0.25, VOCAB, H, SPECIAL)
    texts = _texts(settings, rule, keys, None, settings["seed"] + 12).tokens
    result: dict[str, Any] = {"texts": n_texts, "scored": n, "by_gamma": {}}
    for gamma in settings["fpr_gammas"]:
        rule = GreenList(gamma, VOCAB, H, SPECIAL)
        fresh = green_sequences(texts, keys, rule)
        fixed_key = int(keys[0])
        per_key = []
        for k in _keys(np.random.default_rng(settings["seed"] + 13), settings["fixed_keys"]):
            greens = green_sequences(texts, np.full(n_texts, k, dtype=np.uint64), rule)
            per_key.append(_exact_hits(greens, n, gamma)["hits"]["0.01"] / n_texts)
        fixed = green_sequences(texts, np.full(n_texts, fixed_key, dtype=np.uint64), rule)
        result["by_gamma"][str(gamma)] = {
            "fresh_key": _exact_hits(fresh, n, gamma),
            "z_test": _z_hits(fresh, n, gamma),
            "no_dedup": _exact_hits(green_sequences(texts, keys, rule, dedup=False), n, gamma),
            "fixed_key": _exact_hits(fixed, n, gamma),
            "per_key_fpr_001": per_key,
            "short_texts": int(sum(g.size < n for g in fresh)),
        }
    result["low_diversity"] = low_diversity_fpr(n_texts, seed=settings["seed"])
    result["seconds"] = time.perf_counter() - start
    return result


def _cell_stats(gen: Generated, rule: GreenList, ns: list[int], alpha: float) -> dict[str, Any]:
    greens = green_sequences(gen.tokens, gen.keys, rule)
    dedup_probs, raw_probs, bounds = [], [], []
    for i in range(gen.tokens.shape[0]):
        pos = scored_positions(gen.tokens[i], rule.h) - gen.prompt_len
        dedup_probs.append(gen.green_prob_dedup[i, pos])
        raw_probs.append(gen.green_prob[i, pos])
        if gen.bound is not None:
            bounds.append(gen.bound[i, pos])
    rate = float(np.mean(np.concatenate(raw_probs)))
    bound_rate = float(np.mean(np.concatenate(bounds))) if bounds else math.nan
    cells = []
    for n in ns:
        c = critical_count(n, rule.gamma, alpha)
        have = [g for g in greens if g.size >= n]
        hits = int(sum(int(g[:n].sum()) >= c for g in have))
        power = hits / len(have) if have else math.nan
        cells.append({
            "n": n, "texts": len(have), "detected": hits, "power": power,
            "se": math.sqrt(power * (1 - power) / len(have)) if have else math.nan,
            "predicted": conditional_power(dedup_probs, n, rule.gamma, alpha),
            "predicted_no_dedup_correction": conditional_power(raw_probs, n, rule.gamma, alpha),
            "predicted_key_averaged": exact_power(rate, n, rule.gamma, alpha),
            "predicted_kgw_bound": exact_power(bound_rate, n, rule.gamma, alpha)
            if bounds else math.nan,
        })  # fmt: skip
    return {"green_rate": rate, "bound_rate": bound_rate, "cells": cells}


def _utility(gen: Generated, settings: dict[str, Any]) -> dict[str, Any]:
    source = make_source(settings["source_seed"], settings.get("successors", 4))
    nll, off = source.nll(gen.tokens, start=gen.prompt_len)
    ok = ~off
    return {
        "kl": float(gen.kl.mean()),
        "source_nll": float(nll[ok].mean()) if ok.any() else math.nan,
        "error_rate": float(off.mean()),
        "teacher_perplexity": float(math.exp(-gen.clean_logprob.mean())),
    }


def power_cell(settings: dict[str, Any], gamma: float, delta: float) -> dict[str, Any]:
    """Check 2 (and 3's front): watermarked texts at (gamma, delta), measured against predicted."""
    start = time.perf_counter()
    seed = settings["seed"] + int(1000 * gamma) + int(100 * delta)
    keys = _keys(np.random.default_rng(seed), settings["texts"])
    rule = GreenList(gamma, VOCAB, H, SPECIAL)
    gen = _texts(settings, rule, keys, KGWProcessor(rule, keys, delta), seed + 1,
                 bound_delta=delta)  # fmt: skip
    stats = _cell_stats(gen, rule, list(settings["ns"]), settings["alpha"])
    return {"gamma": gamma, "delta": delta, **stats, **_utility(gen, settings),
            "seconds": time.perf_counter() - start}  # fmt: skip


def selection_run(settings: dict[str, Any]) -> dict[str, Any]:
    """Check 3: select (gamma*, delta*) on clean calibration texts, then measure it."""
    start = time.perf_counter()
    rng = np.random.default_rng(settings["seed"] + 21)
    n_cal, n = settings["calib_texts"], settings["calib_n"]
    keys = _keys(rng, n_cal)
    rule = GreenList(0.25, VOCAB, H, SPECIAL)
    cal = _texts(settings, rule, keys, None, settings["seed"] + 22, keep_probs=True)
    assert cal.probs is not None
    rows, seen = [], []
    for i in range(n_cal):
        pos = scored_positions(cal.tokens[i], H)
        if pos.size >= n:
            rows.append(cal.probs[i, pos[:n] - cal.prompt_len])
            seen.append(_earlier_successors(cal.tokens[i], pos[:n]))
    probs = np.stack(rows).astype(np.float64)  # (N, n, V)
    seen_idx = [(i, j, u) for i, per in enumerate(seen) for j, us in enumerate(per) for u in us]
    si, sj, su = (np.array(z, dtype=np.int64) for z in zip(*seen_idx, strict=True)) if seen_idx \
        else (np.zeros(0, dtype=np.int64),) * 3  # fmt: skip
    seen_mass = np.zeros(probs.shape[:2])
    np.add.at(seen_mass, (si, sj), probs[si, sj, su])
    models = []
    mask_rng = np.random.default_rng(settings["seed"] + 23)
    for gamma in settings["select_gammas"]:
        masses = np.empty((settings["calib_masks"], *probs.shape[:2]))
        seen_green = np.zeros_like(masses)
        for m in range(settings["calib_masks"]):
            # a fresh Bernoulli(gamma) mask per position and draw: what a random key gives
            mask = mask_rng.random(probs.shape) < gamma  # (N, n, V)
            mask[..., list(SPECIAL)] = False
            masses[m] = (probs * mask).sum(-1)
            np.add.at(seen_green[m], (si, sj), probs[si, sj, su] * mask[si, sj, su])
        models.append((gamma, CalibrationPositions(masses, gamma, settings["alpha"], seen_mass,
                                                   seen_green)))  # fmt: skip
    chosen = select(models, settings["target"])
    curves = {
        str(g): [{"delta": d, "power": model.power(d), "kl": model.kl(d)}
                 for d in settings["deltas"]]
        for g, model in models
    }  # fmt: skip
    result: dict[str, Any] = {
        "calibration_texts": len(rows), "n": n, "target": settings["target"],
        "alpha": settings["alpha"], "rows": [_row(r) for r in chosen.rows],
        "predicted_curves": curves,
    }  # fmt: skip
    pick = chosen.chosen
    if pick is not None:
        gkeys = _keys(np.random.default_rng(settings["seed"] + 24), settings["texts"])
        grule = GreenList(pick.gamma, VOCAB, H, SPECIAL)
        gen = _texts(settings, grule, gkeys, KGWProcessor(grule, gkeys, pick.delta),
                     settings["seed"] + 25)  # fmt: skip
        measured = _cell_stats(gen, grule, [n], settings["alpha"])["cells"][0]
        result["chosen"] = {
            **_row(pick),
            "kl_predicted": pick.kl,
            "measured": measured,
            **_utility(gen, settings),
        }  # its "kl" is the measured one
    result["seconds"] = time.perf_counter() - start
    return result


def _earlier_successors(tokens: np.ndarray, positions: np.ndarray) -> list[list[int]]:
    """For each scored position, the tokens that followed its context earlier in the text."""
    after: dict[tuple[int, ...], set[int]] = {}
    wanted = set(positions.tolist())
    out: dict[int, list[int]] = {}
    for t in range(H, int(positions.max()) + 1 if positions.size else H):
        ctx = tuple(tokens[t - H : t].tolist())
        if t in wanted:
            out[t] = sorted(after.get(ctx, ()))
        after.setdefault(ctx, set()).add(int(tokens[t]))
    return [out[int(t)] for t in positions]


def _row(r: Any) -> dict[str, Any]:
    return {"gamma": r.gamma, "delta": r.delta, "kl": r.kl, "power": r.power,
            "feasible": r.feasible}  # fmt: skip
