"""The distillation experiment: one student fine-tuned on one teacher's traces, then tested.

A run is (method, strength, seed, student architecture): the teacher writes continuations of
`prompts` source prompts, clean (`control`), with KGW's bias delta (`kgw`) or with ADFP's
proxy-weighted perturbation of strength lam (`adfp`), all with the seed's key and gamma = 0.5;
the student base is fine-tuned on the continuation tokens for `epochs` epochs, and after epochs
1 and `epochs` it is tested (open mode on its training traces, supervised; open mode on fresh
traces of the same teacher, unsupervised; closed and Sander's reading mode). The transformer
control of seed 0 also runs check 4's false-positive sweeps. Setup ours (§5 of the spec).
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import json
import math
import time
from dataclasses import asdict
from typing import Any

import numpy as np
import torch

from harness.paths import cache_dir
from harness.suites.provenance.bases import load_base, spec_of, teacher_of
from harness.suites.provenance.generate import Generated, generate
from harness.suites.provenance.greenlist import GreenList
from harness.suites.provenance.lm import TinyLM, train_lm
from harness.suites.provenance.radioactivity import (
    fingerprint_test,
    hoeffding,
    open_means,
    read_student,
)
from harness.suites.provenance.source import EOS, SPECIAL, VOCAB, make_source
from harness.suites.provenance.watermark import ADFPProcessor, IncrementalProxy, KGWProcessor

H = 2
METHODS = ("control", "kgw", "adfp")
UNSUPERVISED_SEED = 43  # ADFP's seed for fresh fingerprinted traces


def key_of(seed: int) -> int:
    """The fingerprint key of a seed (any 63-bit integer would do)."""
    return int.from_bytes(hashlib.sha256(f"provenance-key-{seed}".encode()).digest()[:8]) >> 1


def _teacher(settings: dict[str, Any]) -> Any:
    spec = settings.get("teacher_spec")
    return teacher_of(settings["teacher"], spec_of(spec) if spec else None,
                      settings["source_seed"])  # fmt: skip


def _processor(method: str, strength: float, rule: GreenList, key: int,
               settings: dict[str, Any]) -> Any:  # fmt: skip
    if method == "control":
        return None
    if method == "kgw":
        return KGWProcessor(rule, key, strength)
    if method == "adfp":
        proxy = load_base(spec_of(settings["proxy_spec"]), settings["source_seed"])
        return ADFPProcessor(rule, key, strength, IncrementalProxy(proxy), eos=EOS)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def traces(method: str, strength: float, key: int, settings: dict[str, Any], n: int,
           seed: int) -> Generated:  # fmt: skip
    """Make n continuations of fresh source prompts by the teacher under the method.

    Cached on disk (the transformer and GRU students of a seed read the same traces); a file
    lock makes a concurrent run wait for the one that writes them.
    """
    blob = json.dumps({"v": 1, "method": method, "strength": strength, "key": key, "n": n,
                       "seed": seed, "settings": {k: settings[k] for k in _TRACE_KEYS}},
                      sort_keys=True)  # fmt: skip
    folder = cache_dir() / "provenance-traces"
    folder.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(blob.encode()).hexdigest()[:20]
    path = folder / f"{name}.npz"
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            with np.load(path) as z:
                fields = {k: z[k] for k in z.files}
            return Generated(prompt_len=int(fields.pop("prompt_len")), **fields)
        gen = _make_traces(method, strength, key, settings, n, seed)
        tmp = folder / f"{name}.tmp.npz"
        np.savez(tmp, tokens=gen.tokens, prompt_len=gen.prompt_len, keys=gen.keys, kl=gen.kl,
                 green_mass=gen.green_mass, green_prob=gen.green_prob,
                 green_prob_dedup=gen.green_prob_dedup,
                 clean_logprob=gen.clean_logprob)  # fmt: skip
        tmp.replace(path)
    return gen


_TRACE_KEYS = ("source_seed", "successors", "teacher", "teacher_spec", "proxy_spec",
               "prompt_len", "continuation", "gamma")  # fmt: skip


def _make_traces(method: str, strength: float, key: int, settings: dict[str, Any], n: int,
                 seed: int) -> Generated:  # fmt: skip
    source = make_source(settings["source_seed"], settings["successors"])
    prompts = source.sample(n, settings["prompt_len"], np.random.default_rng(seed))
    rule = GreenList(settings["gamma"], VOCAB, H, SPECIAL)
    keys = np.full(n, key, dtype=np.uint64)
    processor = _processor(method, strength, rule, key, settings)
    with torch.no_grad():
        return generate(_teacher(settings), prompts, settings["continuation"], rule, keys,
                        processor, seed=seed + 1)  # fmt: skip


def trace_metrics(gen: Generated, settings: dict[str, Any]) -> dict[str, float]:
    """Distortion and utility of traces: exact KL, source NLL, error rate, clean perplexity."""
    source = make_source(settings["source_seed"], settings["successors"])
    nll, off = source.nll(gen.tokens, start=gen.prompt_len)
    green = float(gen.green_prob.mean())
    return {
        "kl": float(gen.kl.mean()),
        "source_nll": float(nll[~off].mean()) if (~off).any() else math.nan,
        "error_rate": float(off.mean()),
        "teacher_perplexity": float(math.exp(-gen.clean_logprob.mean())),
        "teacher_green_rate": green,
    }


def _tests(student: TinyLM, sup: Generated, unsup: Generated, key: int, rule: GreenList,
           seed: int) -> dict[str, Any]:  # fmt: skip
    read_sup = read_student(student, sup.tokens, sup.prompt_len, H)
    read_unsup = read_student(student, unsup.tokens, unsup.prompt_len, H)
    out = {}
    for name, readings, mode in (("open_supervised", read_sup, "open"),
                                 ("open_unsupervised", read_unsup, "open"),
                                 ("closed_supervised", read_sup, "closed"),
                                 ("reading_supervised", read_sup, "reading")):  # fmt: skip
        out[name] = asdict(fingerprint_test(readings, key, rule, mode, seed=seed))
    return out


def _fpr_sweeps(student: TinyLM, settings: dict[str, Any], seed: int) -> dict[str, Any]:
    """Check 4's false positives: clean text under many keys; other keys' fingerprinted traces."""
    rule = GreenList(settings["gamma"], VOCAB, H, SPECIAL)
    alpha = settings["fpr_alpha"]
    source = make_source(settings["source_seed"], settings["successors"])
    clean = source.sample(settings["fpr_texts"], settings["fpr_length"],
                          np.random.default_rng(seed + 7))  # fmt: skip
    readings = read_student(student, clean, H, H)
    rng = np.random.default_rng(seed + 8)
    keys = rng.integers(0, 2**63, settings["fpr_keys"], dtype=np.int64).astype(np.uint64)
    means = open_means(readings, keys, rule)
    p = np.array([hoeffding(float(m), readings.contexts.shape[0], rule.gamma)[0] for m in means])
    other_p = []
    for i in range(settings["other_keys"]):
        other = int(rng.integers(0, 2**63))
        gen = traces("kgw", settings["fpr_delta"], other, settings, settings["other_traces"],
                     seed=seed + 100 + i)  # fmt: skip
        read = read_student(student, gen.tokens, gen.prompt_len, H)
        other_p.append(fingerprint_test(read, other, rule, "open").p_value)
    return {
        "clean_texts": settings["fpr_texts"], "keys": settings["fpr_keys"], "alpha": alpha,
        "contexts": int(readings.contexts.shape[0]), "clean_hits": int((p <= alpha).sum()),
        "clean_mean_excess": float(means.mean() - rule.gamma),
        "other_keys": settings["other_keys"], "other_traces": settings["other_traces"],
        "other_hits": int(sum(x <= alpha for x in other_p)), "other_p": other_p,
    }  # fmt: skip


def distill_run(method: str, strength: float, seed: int, arch: str,
                settings: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """Traces, fine-tuning and tests of one student; JSON-ready."""
    start = time.perf_counter()
    key = key_of(seed)
    rule = GreenList(settings["gamma"], VOCAB, H, SPECIAL)
    sup = traces(method, strength, key, settings, settings["prompts"], seed=1000 * seed)
    unsup = traces(method, strength, key, settings, settings["fresh_prompts"],
                   seed=1000 * seed + UNSUPERVISED_SEED)  # fmt: skip
    student = copy.deepcopy(load_base(spec_of(settings["students"][arch]),
                                      settings["source_seed"]))  # fmt: skip
    loss_mask = torch.zeros(sup.tokens.shape, dtype=torch.bool)
    loss_mask[:, sup.prompt_len :] = True
    by_epoch: dict[str, Any] = {}

    def after(epoch: int, model: TinyLM) -> None:
        if epoch in (1, settings["epochs"]):
            by_epoch[str(epoch)] = _tests(model, sup, unsup, key, rule, seed)

    torch.manual_seed(seed)
    losses = train_lm(student, torch.from_numpy(sup.tokens), loss_mask,
                      epochs=settings["epochs"], lr=settings["lr"],
                      batch_size=settings["batch_size"], seed=seed, after_epoch=after)  # fmt: skip
    result: dict[str, Any] = {
        "method": method, "strength": strength, "seed": seed, "arch": arch, "key": str(key),
        "traces": trace_metrics(sup, settings), "losses": losses, "epochs": by_epoch,
    }  # fmt: skip
    if method == "control" and arch == "transformer" and seed == 0:
        result["fpr"] = _fpr_sweeps(student, settings, seed)
    result["seconds"] = time.perf_counter() - start
    return result
