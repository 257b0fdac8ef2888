"""ProtoKV's summary-state bank: at most K frame-shaped prototypes that absorb evicted frames.

Source: Le Tu Ngoc Minh, Jinyeong Lim, Dongsu Han, "ProtoKV: Streaming Video Understanding under
Delayed Query with Summary-State Memory", arXiv 2606.26762 (ICML 2026). The algorithm and its
defaults follow the authors' code (`lwx270901/ProtoKV`, `kvcache_utils_proto.py`, where it is
called `prototrack-kv`), as specs/protokv.md §2 reads it; this is that faithful version, for
one KV head, in numpy. What the code does, and this bank does too:

- absorb: an evicted frame seeds the first inactive slot, else joins the slot of least cost
  (−mean cosine of keys + λ_sp·Mahalanobis of token coordinates + λ_idle·[idle]); the centres
  move by an EMA (α = β = η = 0.05), the count grows by one, the residuals after the update are
  product-quantised into per-token histograms;
- maintenance once every slot is active: idle decay n ← ⌊(1−γ)n⌋, deactivation below n_min,
  mass-weighted merges of near-identical slots, and re-seeding of free slots from the newest
  near frame;
- query: each prototype becomes S pseudo-frames (centre plus its S most probable residual
  modes) whose every token carries the attention-logit bias log max(n_k, 1).

Observations from reading the code (specs/protokv.md §3), which hold here as well:
- every frame's token coordinates are the same grid and slots are seeded with μ = grid, so μ
  stays the grid, Σ only shrinks and the spatial Mahalanobis term is always 0: "spatial"
  structure is one centre per within-frame token position;
- the shipped script's M = 3 with the default S = 8 gives W = M − K·S < 1, which the layout
  cannot hold; `budget_split` refuses it;
- the persistent state (2K centre frames, the histograms, the codebooks) is larger than the
  M·P entries attention sees: "matched budget" counts the exposed entries.

Ours (reconstructed): no RoPE re-anchoring (the toy has no positions, so R(Δ) is the
identity); one head; and the codebooks are fit once `codebook_frames` frames have been evicted
(the code fits them on the frames evicted at the first compression, which in a per-frame
stream is M + 1 − W frames; the spec's §5 prototype waits for 16). Those frames are buffered
only until the fit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.errors import HarnessUsageError
from harness.suites.protokv.pq import fit_codebooks, quantise, subspaces, top_codes


@dataclass(frozen=True, slots=True)
class Budget:
    """How M exposed frames split between the near window and the bank."""

    frames: int  # M: frames attention sees
    modes: int  # S: pseudo-frames per prototype
    prototypes: int  # K
    window: int  # W = M − K·S exact near frames


def budget_split(frames: int, modes: int, max_prototypes: int = 0) -> Budget:
    """K = min(K_max, max(1, ⌊(M−1)/S⌋)) and W = M − K·S, as the authors' code splits M.

    K_max = 0 picks it for a 1:3 near:far split: max(1, min(round(3M/(4S)), ⌊(M−1)/S⌋)),
    rounded as Python rounds. A split that leaves no near frame (W < 1; for example the
    shipped script's M = 3 with S = 8) is a usage error.
    """
    m, s, k_max = int(frames), int(modes), int(max_prototypes)
    if s < 1:
        raise HarnessUsageError(f"protokv: S (modes) must be at least 1, got {s}")
    if k_max < 0:
        raise HarnessUsageError(f"protokv: K_max must be >= 0 (0: automatic), got {k_max}")
    if m < s + 1:
        raise HarnessUsageError(
            f"protokv: M = {m} frames cannot hold one prototype of S = {s} pseudo-frames and a "
            f"near frame; give M >= S + 1 = {s + 1}"
        )
    if k_max == 0:
        k_max = max(1, min(round(3 * m / (4 * s)), (m - 1) // s))
    k = min(k_max, max(1, (m - 1) // s))
    return Budget(m, s, k, m - k * s)


@dataclass(frozen=True, slots=True)
class BankConfig:
    """ProtoKV's settings; the defaults are the authors' argparse defaults (spec §2)."""

    prototypes: int  # K slots
    modes: int = 8  # S pseudo-frames per prototype ("paper default")
    groups: int = 8  # G PQ subspaces, rounded to a divisor of D
    codes: int = 16  # C codewords per subspace
    alpha: float = 0.05  # key-centre EMA
    beta: float = 0.05  # value-centre EMA
    eta: float = 0.05  # μ, Σ EMA
    gamma: float = 0.05  # idle decay
    lam_sp: float = 0.1  # weight of the spatial Mahalanobis term
    lam_idle: float = 0.01  # cost of choosing an idle slot
    idle: int = 120  # frames without an absorb before a slot counts as idle
    merge_k: float = 0.20  # merge when ‖c_i − c_j‖/√(PD) < this ...
    merge_v: float = 0.25  # ... and ‖p_i − p_j‖/√(PD) < this
    n_min: float = 1.0  # a slot below this mass is deactivated
    eps: float = 1e-5  # histogram smoothing
    codebook_frames: int = 16  # residual frames collected before the codebooks are fit
    kmeans_iters: int = 4  # pq_kmeans_iters (the scripts use 2)
    kmeans_sample: int = 4096  # pq_sample_size (the scripts use 512)
    seed: int = 0  # k-means sampling and initialisation

    def __post_init__(self) -> None:
        """Refuse settings the algorithm cannot run with."""
        if self.prototypes < 1 or self.modes < 1 or self.codes < 1 or self.groups < 1:
            raise HarnessUsageError("protokv: K, S, G and C must each be at least 1")
        if self.codebook_frames < 1 or self.kmeans_iters < 0 or self.kmeans_sample < 1:
            raise HarnessUsageError("protokv: codebook_frames and kmeans_sample must be >= 1")
        for name in ("alpha", "beta", "eta", "gamma"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise HarnessUsageError(f"protokv: {name} must lie in [0, 1]")


def ema(centre: np.ndarray, frame: np.ndarray, rate: float) -> np.ndarray:
    """(1 − rate)·centre + rate·frame."""
    return (1.0 - rate) * centre + rate * frame


def idle_decay(count: float, gamma: float) -> float:
    """The idle decay of a mass: ⌊(1 − γ)·n⌋."""
    return float(math.floor((1.0 - gamma) * count))


def log_mass_bias(counts: np.ndarray) -> np.ndarray:
    """The attention-logit bias of each prototype's pseudo-tokens: log max(n_k, 1)."""
    return np.log(np.maximum(np.asarray(counts, dtype=np.float64), 1.0))


def grid(tokens: int) -> np.ndarray:
    """Normalised (row, col) coordinates of a frame's tokens on the squarest grid, (P, 2)."""
    rows = int(math.isqrt(tokens))
    while tokens % rows:
        rows -= 1
    cols = tokens // rows
    r, c = np.divmod(np.arange(tokens), cols)
    return np.stack([r / max(rows - 1, 1), c / max(cols - 1, 1)], axis=1).astype(np.float64)


@dataclass(frozen=True, slots=True)
class PseudoFrames:
    """What the bank shows attention: K·S pseudo-frames and the bias of each pseudo-token."""

    keys: np.ndarray  # (K·S·P, D)
    values: np.ndarray  # (K·S·P, D)
    bias: np.ndarray  # (K·S·P,): log max(n_k, 1) on prototype k's tokens


class ProtoBank:
    """K prototype slots of fixed size, for frames of P tokens of dimension D."""

    def __init__(self, config: BankConfig, tokens: int, dim: int) -> None:
        """Empty slots; the codebooks are fit after `codebook_frames` residual frames."""
        k, p, d = config.prototypes, tokens, dim
        self.config = config
        self.groups = subspaces(d, config.groups)
        g, c = self.groups, config.codes
        self.coords = grid(p)  # (P, 2)
        self.keys = np.zeros((k, p, d))  # c_k
        self.values = np.zeros((k, p, d))  # p_k
        self.counts = np.zeros(k)  # n_k
        self.anchors = np.zeros(k, dtype=np.int64)  # τ_k
        self.active = np.zeros(k, dtype=bool)
        self.mu = np.zeros((k, p, 2))
        self.sigma = np.zeros((k, p, 2, 2))
        self.hist_k = np.zeros((k, p, g, c))  # residual-code counts of keys
        self.hist_v = np.zeros((k, p, g, c))  # ... and of values
        self.books_k = np.zeros((g, c, d // g))  # codebooks, zero until fit
        self.books_v = np.zeros((g, c, d // g))
        self.fitted = False
        self._warmup: list[tuple[int, np.ndarray, np.ndarray]] = []  # (t, F_K, F_V) until fit

    # --- absorbing ---------------------------------------------------------------------------

    def _seed(self, slot: int, fk: np.ndarray, fv: np.ndarray, t: int) -> None:
        self.keys[slot], self.values[slot] = fk, fv
        self.counts[slot], self.anchors[slot], self.active[slot] = 1.0, t, True
        self.mu[slot] = self.coords
        self.sigma[slot] = np.eye(2)
        self.hist_k[slot] = 0.0
        self.hist_v[slot] = 0.0

    def costs(self, fk: np.ndarray, t: int) -> np.ndarray:
        """Assignment cost of each slot for a frame's keys (inf for inactive slots).

        −mean_p cos(F[p], c_k[p]) + λ_sp·mean_p (x_p − μ_kp)ᵀ(Σ_kp + 1e-4·I)⁻¹(x_p − μ_kp)
        + λ_idle·[t − τ_k > idle]; the Mahalanobis term is squared, as in the code.
        """
        cfg = self.config
        num = (self.keys * fk[None]).sum(-1)  # (K, P)
        den = np.linalg.norm(self.keys, axis=-1) * np.linalg.norm(fk, axis=-1)[None]
        cos = num / np.maximum(den, 1e-12)
        diff = self.coords[None] - self.mu  # (K, P, 2)
        cov = self.sigma + 1e-4 * np.eye(2)
        maha = np.einsum("kpi,kpi->kp", diff, np.linalg.solve(cov, diff[..., None])[..., 0])
        idle = (t - self.anchors) > cfg.idle
        cost = -cos.mean(1) + cfg.lam_sp * maha.mean(1) + cfg.lam_idle * idle
        return np.where(self.active, cost, np.inf)

    def absorb(self, fk: np.ndarray, fv: np.ndarray, t: int) -> int:
        """Absorb an evicted frame (keys, values: (P, D)) of time t; returns its slot."""
        cfg = self.config
        free = np.flatnonzero(~self.active)
        if free.size:
            slot = int(free[0])
            self._seed(slot, fk, fv, t)
        else:
            slot = int(np.argmin(self.costs(fk, t)))
            self.keys[slot] = ema(self.keys[slot], fk, cfg.alpha)
            self.values[slot] = ema(self.values[slot], fv, cfg.beta)
            self.counts[slot] += 1.0
            self.anchors[slot] = t
            self.mu[slot] = ema(self.mu[slot], self.coords, cfg.eta)
            dev = self.coords - self.mu[slot]  # (P, 2), after μ's update as in the code
            self.sigma[slot] = ema(self.sigma[slot], dev[:, :, None] * dev[:, None, :], cfg.eta)
            if self.fitted:  # residuals after the update
                self._count(slot, fk - self.keys[slot], fv - self.values[slot])
        if not self.fitted:
            self._warmup.append((t, fk, fv))
            if len(self._warmup) >= cfg.codebook_frames:
                self._fit()
        return slot

    def _count(self, slot: int, r_k: np.ndarray, r_v: np.ndarray) -> None:
        p = np.arange(r_k.shape[0])[:, None]
        g = np.arange(self.groups)[None, :]
        np.add.at(self.hist_k[slot], (p, g, quantise(r_k, self.books_k)), 1.0)
        np.add.at(self.hist_v[slot], (p, g, quantise(r_v, self.books_v)), 1.0)

    def _fit(self) -> None:
        """Fit the codebooks on the first far frames, then rebuild the histograms from them.

        As the authors' code does: each buffered frame is assigned to its least-cost slot in
        the bank as it is now, its residuals against that slot's centres feed k-means, and the
        histograms are cleared and counted again from the same assignments.
        """
        cfg = self.config
        args = dict(iters=cfg.kmeans_iters, sample=cfg.kmeans_sample)
        slots = [int(np.argmin(self.costs(fk, t))) for t, fk, _ in self._warmup]
        r_k = [fk - self.keys[k] for k, (_, fk, _) in zip(slots, self._warmup, strict=True)]
        r_v = [fv - self.values[k] for k, (_, _, fv) in zip(slots, self._warmup, strict=True)]
        self.books_k = fit_codebooks(np.concatenate(r_k), self.groups, cfg.codes,
                                     seed=cfg.seed + 17, **args)  # fmt: skip
        self.books_v = fit_codebooks(np.concatenate(r_v), self.groups, cfg.codes,
                                     seed=cfg.seed + 29, **args)  # fmt: skip
        self.fitted = True
        self.hist_k[:] = 0.0
        self.hist_v[:] = 0.0
        for slot, rk, rv in zip(slots, r_k, r_v, strict=True):
            self._count(slot, rk, rv)
        self._warmup = []

    # --- maintenance -------------------------------------------------------------------------

    def maintain(self, t: int, newest: tuple[np.ndarray, np.ndarray] | None) -> None:
        """Idle decay, deactivation, merges, then re-seeding from the newest near frame.

        The authors' code runs this once per compression step (once per frame in per-frame
        mode, after the frames evicted at that step are absorbed).
        """
        cfg = self.config
        for k in range(len(self.counts)):
            if self.active[k] and t - self.anchors[k] > cfg.idle:
                self.counts[k] = idle_decay(self.counts[k], cfg.gamma)
            if self.counts[k] < cfg.n_min:
                self.active[k] = False
        self._merge()
        if newest is not None:
            for k in np.flatnonzero(~self.active | (self.counts < cfg.n_min)):
                self._seed(int(k), newest[0], newest[1], t)

    def _merge(self) -> None:
        cfg = self.config
        scale = math.sqrt(self.keys.shape[1] * self.keys.shape[2])  # √(PD)
        slots = len(self.counts)
        for i in range(slots):
            for j in range(i + 1, slots):
                if not (self.active[i] and self.active[j]):
                    continue
                dk = np.linalg.norm(self.keys[i] - self.keys[j]) / scale
                dv = np.linalg.norm(self.values[i] - self.values[j]) / scale
                if dk < cfg.merge_k and dv < cfg.merge_v:
                    self.merge(i, j)

    def merge(self, i: int, j: int) -> None:
        """Fold slot j into slot i: mass-weighted centres, μ and Σ; counts and histograms add."""
        ni, nj = self.counts[i], self.counts[j]
        wi, wj = ni / (ni + nj), nj / (ni + nj)
        for arr in (self.keys, self.values, self.mu, self.sigma):
            arr[i] = wi * arr[i] + wj * arr[j]
        self.counts[i] = ni + nj
        self.anchors[i] = max(self.anchors[i], self.anchors[j])
        self.hist_k[i] += self.hist_k[j]
        self.hist_v[i] += self.hist_v[j]
        self.active[j] = False
        self.counts[j] = 0.0

    # --- query -------------------------------------------------------------------------------

    def synthesise(self, *, residuals: bool = True, bias: bool = True) -> PseudoFrames:
        """K·S pseudo-frames: each centre plus its S most probable residual modes.

        Args:
            residuals: False for the ablation without residual modes (S copies of the centre).
            bias: False for the ablation without the log-mass bias (bias 0).

        """
        cfg = self.config
        k, p, d = self.keys.shape
        s = cfg.modes
        keys = np.repeat(self.keys[:, None], s, axis=1)  # (K, S, P, D)
        values = np.repeat(self.values[:, None], s, axis=1)
        if residuals and self.fitted:
            keys = keys + self._modes(self.hist_k, self.books_k)
            values = values + self._modes(self.hist_v, self.books_v)
        mass = log_mass_bias(self.counts) if bias else np.zeros(k)
        tok_bias = np.repeat(mass, s * p)  # (K·S·P,)
        return PseudoFrames(keys.reshape(-1, d), values.reshape(-1, d), tok_bias)

    def _modes(self, hist: np.ndarray, books: np.ndarray) -> np.ndarray:
        """(K, S, P, D) residuals; zero for a prototype or token with no counts."""
        cfg = self.config
        k, p = hist.shape[:2]
        out = np.zeros((k, cfg.modes, p, books.shape[0] * books.shape[2]))
        for slot in range(k):
            for tok in range(p):
                h = hist[slot, tok]
                if h.sum() == 0:
                    continue
                top = top_codes(h, cfg.modes, beam=4 * cfg.modes, eps=cfg.eps)
                for m, codes in enumerate(top.tuples):
                    out[slot, m, tok] = books[np.arange(len(codes)), list(codes)].reshape(-1)
        return out

    def state_bytes(self) -> int:
        """Bytes of the persistent state: centres, counts, anchors, μ, Σ, histograms, codebooks."""
        arrays = (self.keys, self.values, self.counts, self.anchors, self.active, self.mu,
                  self.sigma, self.hist_k, self.hist_v, self.books_k, self.books_v)  # fmt: skip
        return sum(a.nbytes for a in arrays)
