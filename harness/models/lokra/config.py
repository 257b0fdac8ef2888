"""Configuration of LoRA, LoKRA and LoKRA+ adapters (specs/lokra.md).

One frozen dataclass covers the three methods. Fields a method does not use are rejected when set
(`kr_i`, `kr_j`, `n_subsets`), except `lam`, which plain LoRA ignores so that switching `method`
is a one-field change. Layer-dependent checks (the rank against the layer's size, I·J against
d_out) run when the adapter is attached to a layer, through `check_layer`.

Reconstructed or chosen here, not taken from the paper (specs/lokra.md §4):
- the log-det penalty itself and its defaults (`eps`, `subset_size`, `subset_mode`);
- `b_warmup="skip_zero"`: the penalty on B (LoKRA) or D (LoKRA+) is skipped while that factor is
  exactly zero, i.e. until the first optimiser step moves it; the spec's alternative is `"noise"`
  (initialise it with N(0, 1e-6²) and penalise from the start);
- LoKRA+ factor sizes: by default I = J = ⌈√d_out⌉ per layer, so (I + J)·d_in matches LoRA's
  r·(d_in + d_out) when r = √d for a square layer (the spec's d = 64, r = 8, I = J = 8 example);
- `kr_scale = 1.0`: LoRA's α/r compensates for ΔW = BA summing r rank-one terms; an entry of the
  Khatri–Rao update D ⊙ C is a single product, so no rank-dependent factor is needed. Treat it
  like a learning-rate multiplier and sweep it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from harness.errors import HarnessUsageError

Method = Literal["lora", "lokra", "lokra_plus"]
SubsetMode = Literal["partition", "sample"]
BWarmup = Literal["skip_zero", "noise"]

# DoRA's commonsense protocol adapts the q, k, v, up and down projections (specs/lokra.md §2).
DORA_TARGETS = ("q_proj", "k_proj", "v_proj", "up_proj", "down_proj")
# Standard deviation of B (or D) at initialisation under b_warmup="noise" (specs/lokra.md §2).
NOISE_STD = 1e-6


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise HarnessUsageError(f"{name}={value!r} is not one of {', '.join(map(repr, allowed))}")


@dataclass(frozen=True, slots=True)
class AdapterConfig:
    """Hyper-parameters of one adapter method, shared by every adapted layer.

    Notes:
        Validated when built; a user mistake raises `HarnessUsageError` naming the field.

    """

    method: Method  # "lora": ΔW = BA; "lokra": BA plus the log-det penalty; "lokra_plus": D ⊙ C
    r: int = 8  # LoRA rank of A (r×d_in) and B (d_out×r); unused by lokra_plus
    alpha: float = 16.0  # LoRA output scale is alpha / r; unused by lokra_plus
    dropout: float = 0.0  # dropout on the adapter's input, as in LoRA
    lam: float = 1e-2  # λ, penalty weight (the spec says sweep 1e-4 … 1e-1); ignored by "lora"
    eps: float = 1e-4  # ε added to each subset's Gram matrix before the log-det
    subset_size: int | None = None  # s; None: a factor's row count (r for A/Bᵀ, I for C, J for D)
    subset_mode: SubsetMode = "partition"  # permuted blocks each call, or random subsets
    n_subsets: int | None = None  # subsets per call in "sample" mode; required there only
    kr_i: int | None = None  # LoKRA+ I (rows of C); None: ⌈√d_out⌉ per layer; set with kr_j
    kr_j: int | None = None  # LoKRA+ J (rows of D); None: ⌈√d_out⌉ per layer; set with kr_i
    kr_scale: float = 1.0  # LoKRA+ output scale; the paper's is unknown (see module docstring)
    b_warmup: BWarmup = "skip_zero"  # rule for the zero-initialised factor's penalty
    target_modules: tuple[str, ...] = DORA_TARGETS  # nn.Linear names matched by suffix

    def __post_init__(self) -> None:
        _choice("method", self.method, get_args(Method))
        _choice("subset_mode", self.subset_mode, get_args(SubsetMode))
        _choice("b_warmup", self.b_warmup, get_args(BWarmup))
        if isinstance(self.target_modules, str) or not all(
            isinstance(t, str) and t for t in self.target_modules
        ):
            raise HarnessUsageError(
                f"target_modules={self.target_modules!r} must be a tuple of module names, "
                "e.g. ('q_proj', 'v_proj')"
            )
        object.__setattr__(self, "target_modules", tuple(self.target_modules))
        if not self.target_modules:
            raise HarnessUsageError("target_modules is empty; name at least one nn.Linear")
        if not isinstance(self.r, int) or self.r < 1:
            raise HarnessUsageError(f"r={self.r!r} must be a positive integer")
        if not self.alpha > 0:
            raise HarnessUsageError(f"alpha={self.alpha!r} must be > 0")
        if not 0.0 <= self.dropout < 1.0:
            raise HarnessUsageError(f"dropout={self.dropout!r} must be in [0, 1)")
        if not self.lam >= 0:
            raise HarnessUsageError(f"lam={self.lam!r} must be >= 0 (λ is a penalty weight)")
        if not self.eps > 0:
            raise HarnessUsageError(f"eps={self.eps!r} must be > 0 (it keeps log det finite)")
        if self.subset_size is not None and self.subset_size < 1:
            raise HarnessUsageError(f"subset_size={self.subset_size!r} must be >= 1 or None")
        if self.subset_mode == "sample" and (self.n_subsets is None or self.n_subsets < 1):
            raise HarnessUsageError(
                f"n_subsets={self.n_subsets!r}: subset_mode='sample' needs n_subsets >= 1"
            )
        if self.subset_mode == "partition" and self.n_subsets is not None:
            raise HarnessUsageError(
                "n_subsets applies to subset_mode='sample' only; drop it or set subset_mode"
            )
        self._check_kr()

    def _check_kr(self) -> None:
        given = (self.kr_i is not None, self.kr_j is not None)
        if any(given) and self.method != "lokra_plus":
            raise HarnessUsageError("kr_i and kr_j apply to method='lokra_plus' only")
        if given[0] != given[1]:
            raise HarnessUsageError("kr_i and kr_j: set both, or neither for I = J = ⌈√d_out⌉")
        for name in ("kr_i", "kr_j"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < 1):
                raise HarnessUsageError(f"{name}={v!r} must be a positive integer")
        if not self.kr_scale > 0:
            raise HarnessUsageError(f"kr_scale={self.kr_scale!r} must be > 0")

    @property
    def scale(self) -> float:
        """Output scale of the update: alpha / r, or kr_scale for lokra_plus."""
        return self.kr_scale if self.method == "lokra_plus" else self.alpha / self.r

    def kr_factors(self, d_out: int) -> tuple[int, int]:
        """LoKRA+ factor sizes (I, J) for a layer with `d_out` outputs."""
        if self.kr_i is not None and self.kr_j is not None:
            return self.kr_i, self.kr_j
        side = math.isqrt(d_out - 1) + 1 if d_out > 1 else 1  # ⌈√d_out⌉
        return side, side

    def check_layer(self, name: str, d_in: int, d_out: int) -> None:
        """Raise `HarnessUsageError` if this config cannot adapt a d_in → d_out layer."""
        if self.method == "lokra_plus":
            i, j = self.kr_factors(d_out)
            if i * j < d_out:
                raise HarnessUsageError(
                    f"kr_i*kr_j={i}*{j}={i * j} is below d_out={d_out} of layer {name!r}; "
                    "choose kr_i*kr_j >= d_out"
                )
            rows = min(i, j)
            what = f"min(kr_i, kr_j)={rows}"
        else:
            limit = min(d_in, d_out)
            if self.r > limit:
                raise HarnessUsageError(
                    f"r={self.r} exceeds min(d_in, d_out)={limit} of layer {name!r}; "
                    f"choose r <= {limit}"
                )
            rows, what = self.r, f"r={self.r}"
        if self.subset_size is not None and self.subset_size > rows:
            raise HarnessUsageError(
                f"subset_size={self.subset_size} exceeds {what} (a subset of more columns than "
                "a factor has rows is always dependent); choose a smaller subset_size"
            )
