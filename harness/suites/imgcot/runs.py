"""One training run per (arm, seed) of the spec's §5 reproduction (all of it reconstructed).

Within a seed every arm sees the same problems, and the stages arms share are trained once per
process and cached: the text-target and image-target autoencoders (stage 1) and the explicit-
CoT model, which is both the `explicit_cot` arm and the scorer of Loose ImgCoT's steps.

Arms (specs/imgcot.md §5): `no_cot` (the reasoner with zero latents), `explicit_cot` (greedy
CoT, then the answer), `text_latents` (latents of the text-target autoencoder), `imgcot`
(latents of the image-target autoencoder), `loose_lowest` (ImgCoT latents plus the m steps of
lowest ℓ, the paper's Loose ImgCoT), `loose_random` and `loose_highest` (the controls).

Stage 2 loss: CE(answer) + CE(kept text and <ans>, where there is text) + λ·MSE(ẑ, sg(z)),
z standardised per dimension over the training set; the reasoner's own detached predictions are
fed back in training and test (teacher-forcing the targets left the answer head unused to its
own latents in the spec's prototype). Every choice here is ours (specs/imgcot.md §2, §5).
"""

from __future__ import annotations

import functools
import hashlib
import random
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from harness.suites.imgcot.problems import (
    ANS,
    COT_LEN,
    SEMI,
    STEP_LEN,
    STEPS,
    THINK,
    Problem,
    encode,
    make_problems,
)
from harness.suites.imgcot.render import Canvas, pillow_version, render
from harness.suites.imgcot.steps import select_steps, step_scores, token_budget

LATENT_ARMS = ("text_latents", "imgcot", "loose_lowest", "loose_random", "loose_highest")
ARMS = ("no_cot", "explicit_cot", *LATENT_ARMS)
LOOSE_RULE = {"loose_lowest": "lowest", "loose_random": "random", "loose_highest": "highest"}


@dataclass(frozen=True)
class RunSpec:
    """One run: an arm, a seed and the preset's sizes."""

    arm: str  # one of ARMS
    seed: int  # seed of the problems and of every initialisation
    settings: tuple[tuple[str, Any], ...]  # sizes, epochs, learning rate, canvas

    def get(self, key: str) -> Any:
        """A setting by name."""
        return dict(self.settings)[key]


@dataclass(frozen=True)
class RunResult:
    """What one run measured."""

    score: float  # test accuracy of the answer
    tokens: float  # mean tokens spent before the answer at test: latents + emitted text
    budget: int  # the arm's nominal budget: k + kept text tokens (CoT length for explicit CoT)
    text_recon_acc: float  # stage 1, text target: test token accuracy (nan for other arms)
    image_bce: float  # stage 1, image target: test pixel BCE (nan for other arms)
    mean_image_bce: float  # BCE of predicting the training mean image (nan for other arms)
    kept_positions: tuple[int, ...]  # loose arms: training problems keeping step 0, 1, 2
    encoder_input_sha: str  # sha256 of the stage-1 encoder's input ids (same for both targets)
    pillow: str  # the Pillow that rendered the images

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready record."""
        return asdict(self)


def _tensor(rows: list[list[int]]):
    import torch

    return torch.tensor(rows, dtype=torch.long)


@functools.lru_cache(maxsize=8)
def _problems(seed: int, n_train: int, n_test: int) -> tuple[list[Problem], list[Problem]]:
    return make_problems(seed, n_train, n_test)


def encoder_inputs(problems: list[Problem]):
    """The stage-1 encoder's input ids (B, 17), the same for the text and image targets."""
    return _tensor([encode(p.cot) for p in problems])


def questions(problems: list[Problem]):
    """The reasoner's input: question then <think>, (B, 8)."""
    return _tensor([[*encode(p.question), THINK] for p in problems])


def _batches(n: int, batch: int, gen):
    import torch

    order = torch.randperm(n, generator=gen)
    return [order[i : i + batch] for i in range(0, n, batch)]


@dataclass(frozen=True)
class Stage1:
    """A trained autoencoder's latents and its test metrics."""

    train_z: Any  # (N, k, d_z) standardised latents of the training problems
    recon_acc: float  # text target: test token accuracy; nan for the image target
    bce: float  # image target: test BCE; nan for the text target
    mean_bce: float  # image target: BCE of the training mean image on the test set
    sha: str  # sha256 of the encoder's input ids, training then test


@functools.lru_cache(maxsize=16)
def autoencoder(seed: int, target: str, settings: tuple[tuple[str, Any], ...]) -> Stage1:
    """Stage 1 for one target ("text" or "image"): train E and its decoder, return the latents."""
    import torch
    import torch.nn.functional as F

    from harness.suites.imgcot.models import CoTEncoder, ImageDecoder, TextDecoder

    s = dict(settings)
    train, test = _problems(seed, s["n_train"], s["n_test"])
    x_train, x_test = encoder_inputs(train), encoder_inputs(test)
    sha = hashlib.sha256(x_train.numpy().tobytes() + x_test.numpy().tobytes()).hexdigest()
    torch.manual_seed(1_000 * seed + 1)  # the same encoder initialisation for both targets
    encoder = CoTEncoder(s["k"], s["d_z"], s["hidden"])
    if target == "image":
        canvas = Canvas(s["width"], s["height"], s["font_size"])
        y_train = torch.from_numpy(np.stack([render(p.cot_text, canvas) for p in train]))
        y_test = torch.from_numpy(np.stack([render(p.cot_text, canvas) for p in test]))
        decoder = ImageDecoder(s["k"], s["d_z"], s["dec_hidden"], s["height"], s["width"])
    else:
        y_train, y_test = x_train, x_test
        decoder = TextDecoder(s["k"], s["d_z"], s["dec_hidden"], COT_LEN)

    def loss_of(logits, y):
        if target == "image":
            return F.binary_cross_entropy_with_logits(logits, y)
        return F.cross_entropy(logits.flatten(0, 1), y.flatten())

    params = [*encoder.parameters(), *decoder.parameters()]
    opt = torch.optim.Adam(params, lr=s["lr"])
    gen = torch.Generator().manual_seed(1_000 * seed + 2)
    for _ in range(s["ae_epochs"]):
        for idx in _batches(len(train), s["batch"], gen):
            loss = loss_of(decoder(encoder(x_train[idx])), y_train[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    with torch.no_grad():
        z_train = encoder(x_train)
        logits = decoder(encoder(x_test))
        if target == "image":
            bce = float(F.binary_cross_entropy_with_logits(logits, y_test))
            mean_img = y_train.mean(0).clamp(1e-6, 1 - 1e-6).expand_as(y_test)
            mean_bce = float(F.binary_cross_entropy(mean_img, y_test))
            acc = float("nan")
        else:
            acc = float((logits.argmax(-1) == y_test).float().mean())
            bce = mean_bce = float("nan")
    mu, sd = z_train.mean(0, keepdim=True), z_train.std(0, keepdim=True).clamp_min(1e-6)
    return Stage1((z_train - mu) / sd, acc, bce, mean_bce, sha)


def _train_reasoner(seed: int, s: dict[str, Any], k: int, text: list[list[int]],
                    z_target, tag: int):  # fmt: skip
    """Stage 2: a reasoner trained on [q, ẑ_1..ẑ_k, text, <ans>, answer]."""
    import torch
    import torch.nn.functional as F

    from harness.suites.imgcot.models import Reasoner

    train, _ = _problems(seed, s["n_train"], s["n_test"])
    q = questions(train)
    text_in = _tensor([[*t, ANS] for t in text])  # (N, T + 1)
    target = torch.cat([text_in, _tensor([[p.answer] for p in train])], 1)  # (N, T + 2)
    torch.manual_seed(1_000 * seed + 10 + tag)
    model = Reasoner(k, s["d_z"], s["hidden"])
    opt = torch.optim.Adam(model.parameters(), lr=s["lr"])
    gen = torch.Generator().manual_seed(1_000 * seed + 20 + tag)
    for _ in range(s["epochs"]):
        for idx in _batches(len(train), s["batch"], gen):
            z_hat, logits = model(q[idx], text_in[idx])  # logits: (B, T + 2, V)
            loss = F.cross_entropy(logits[:, -1], target[idx, -1])  # the answer
            if target.shape[1] > 2:  # text beyond <ans>: its tokens and <ans>
                loss = loss + F.cross_entropy(logits[:, :-1].flatten(0, 1),
                                              target[idx, :-1].flatten())  # fmt: skip
            if k:
                loss = loss + s["lam"] * F.mse_loss(z_hat, z_target[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    model.eval()
    return model


def _evaluate(model, seed: int, s: dict[str, Any], max_text: int) -> tuple[float, float]:
    """Test accuracy and mean tokens before the answer (latents plus emitted text)."""
    _, test = _problems(seed, s["n_train"], s["n_test"])
    answer, emitted = model.generate(questions(test), max_text)
    truth = np.array([p.answer for p in test])
    acc = float((answer.numpy() == truth).mean())
    return acc, float(model.k + emitted.float().mean())


@functools.lru_cache(maxsize=8)
def explicit_model(seed: int, settings: tuple[tuple[str, Any], ...]):
    """The explicit-CoT reasoner (k = 0, text = the whole CoT), trained once per seed."""
    s = dict(settings)
    train, _ = _problems(seed, s["n_train"], s["n_test"])
    return _train_reasoner(seed, s, 0, [encode(p.cot) for p in train], None, tag=1)


def training_step_scores(
    seed: int, settings: tuple[tuple[str, Any], ...]
) -> list[tuple[float, ...]]:
    """ℓ_j of each training problem's steps under the explicit-CoT model, teacher-forced."""
    import torch

    s = dict(settings)
    train, _ = _problems(seed, s["n_train"], s["n_test"])
    model = explicit_model(seed, settings)
    text = _tensor([[*encode(p.cot), ANS] for p in train])  # (N, 18)
    with torch.no_grad():
        _, logits = model(questions(train), text)  # (N, 19, V): position t predicts text[t]
        logp = torch.log_softmax(logits[:, :-1], -1).gather(-1, text.unsqueeze(-1))[..., 0]
    spans = [range(j * (STEP_LEN + 1), j * (STEP_LEN + 1) + STEP_LEN) for j in range(STEPS)]
    lp = logp.numpy()
    return [step_scores([lp[i, list(span)] for span in spans]) for i in range(len(train))]


def kept_text(problem: Problem, kept: tuple[int, ...]) -> list[int]:
    """The kept steps' tokens, in their original order, joined by ";"."""
    out: list[int] = []
    for n, j in enumerate(kept):
        out += ([SEMI] if n else []) + encode(problem.steps[j])
    return out


def run(spec: RunSpec) -> dict[str, Any]:
    """Train one arm at one seed on one torch thread; its `RunResult` as a dict.

    One intra-op thread, whatever the pool set: the models are tiny, and on the shared 2-core
    machine two threads cost several times the CPU (a micro run of the 14 samples: 29 s CPU on
    two threads under load 12, 7 s on one). It also makes a run's result independent of the
    pool. Process-pool friendly.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _run(spec)
    finally:
        torch.set_num_threads(before)


def _run(spec: RunSpec) -> dict[str, Any]:
    s = dict(spec.settings)
    train, _ = _problems(spec.seed, s["n_train"], s["n_test"])
    nan = float("nan")
    common = dict(encoder_input_sha="", pillow=pillow_version(), kept_positions=())
    if spec.arm == "explicit_cot":
        acc, tokens = _evaluate(explicit_model(spec.seed, spec.settings), spec.seed, s, COT_LEN + 2)
        return RunResult(acc, tokens, COT_LEN, nan, nan, nan, **common).as_dict()
    if spec.arm == "no_cot":
        model = _train_reasoner(spec.seed, s, 0, [[] for _ in train], None, tag=0)
        acc, tokens = _evaluate(model, spec.seed, s, 0)
        return RunResult(acc, tokens, 0, nan, nan, nan, **common).as_dict()
    if spec.arm not in ARMS:
        raise ValueError(f"unknown arm {spec.arm!r}; arms: {', '.join(ARMS)}")
    stage = autoencoder(spec.seed, "text" if spec.arm == "text_latents" else "image", spec.settings)
    k, m = s["k"], s["m"]
    texts: list[list[int]] = [[] for _ in train]
    positions = [0] * STEPS
    if spec.arm in LOOSE_RULE:
        rng = random.Random(f"imgcot-random-steps-{spec.seed}")
        scores = training_step_scores(spec.seed, spec.settings)
        texts = []
        for p, sc in zip(train, scores, strict=True):
            kept = select_steps(sc, m, LOOSE_RULE[spec.arm], rng)  # type: ignore[arg-type]
            texts.append(kept_text(p, kept))
            for j in kept:
                positions[j] += 1
    tag = 2 + ARMS.index(spec.arm)
    model = _train_reasoner(spec.seed, s, k, texts, stage.train_z, tag)
    max_text = len(texts[0]) + 2 if texts[0] else 0
    acc, tokens = _evaluate(model, spec.seed, s, max_text)
    budget = token_budget(k, [len(texts[0])] if texts[0] else [], COT_LEN)
    kept_pos = tuple(positions) if spec.arm in LOOSE_RULE else ()
    return RunResult(acc, tokens, budget.total, stage.recon_acc, stage.bce, stage.mean_bce,
                     kept_pos, stage.sha, pillow_version()).as_dict()  # fmt: skip
