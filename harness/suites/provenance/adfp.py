"""ADFP's objective read as antidistillation sampling in logit space, and ADS's finite difference.

From the authors' code (`ADSLogitsProcessor`), ADFP samples from
l'(v) = l(v) + lam q(v) (m(v) - <q, m>), q the proxy's next-token distribution
(`harness.suites.provenance.watermark.ADFPProcessor`). Our reading (derived in the spec, checked
here numerically): with the proxy's next-token logits z as free parameters, one SGD step of size
eta on -log q(x) changes the proxy's green mass G_q = <q, m> by

    eta [q_x (m_x - G_q) - sum_j q_j^2 (m_j - G_q)] + O(eta^2),

whose x-dependent part is q_x (m_x - G_q): ADFP is antidistillation sampling whose objective is
the proxy's green mass at the same context, with the gradient in closed form (one proxy forward
pass per step, no finite differences). `one_step_gain` and `one_step_formula` are the two sides.

ADS (`gentraces.py`, Savani et al., arXiv 2504.13146): l' = l + (lam / 2 eps)
(l_{theta + eps g} - l_{theta - eps g}), the proxy's logits at parameters moved along g
(`ads_shift`); it approximates lam times the directional derivative, which autograd gives
exactly (`ads_shift_exact`), the unit test's reference.
"""

from __future__ import annotations

import numpy as np
import torch
from torch.func import functional_call, jvp
from torch.nn.attention import SDPBackend, sdpa_kernel


def one_step_formula(z: np.ndarray, x: int, m: np.ndarray, eta: float) -> float:
    """First-order change of G_q after one SGD step on -log softmax(z)[x] (closed form)."""
    q = np.exp(z - z.max())
    q /= q.sum()
    g = float(q @ m)
    return eta * (q[x] * (m[x] - g) - float((q**2 * (m - g)).sum()))


def one_step_gain(z: np.ndarray, x: int, m: np.ndarray, eta: float) -> float:
    """The same change measured: take the step (d(-log q_x)/dz = q - e_x), recompute G_q."""
    q = np.exp(z - z.max())
    q /= q.sum()
    step = q.copy()
    step[x] -= 1.0
    z2 = z - eta * step
    q2 = np.exp(z2 - z2.max())
    q2 /= q2.sum()
    return float(q2 @ m - q @ m)


def ads_shift(
    model: torch.nn.Module,
    direction: dict[str, torch.Tensor],
    input_ids: torch.Tensor,
    lam: float,
    eps: float = 1e-2,
) -> torch.Tensor:
    """(lam / 2 eps)(logits at theta + eps g - logits at theta - eps g), last position (B, V)."""
    params = dict(model.named_parameters())
    plus = {k: v + eps * direction[k] for k, v in params.items()}
    minus = {k: v - eps * direction[k] for k, v in params.items()}
    with torch.no_grad():
        up = functional_call(model, plus, (input_ids,))[:, -1]
        down = functional_call(model, minus, (input_ids,))[:, -1]
    return lam / (2 * eps) * (up - down)


def ads_shift_exact(
    model: torch.nn.Module, direction: dict[str, torch.Tensor], input_ids: torch.Tensor, lam: float
) -> torch.Tensor:
    """Lam(bda) times the directional derivative of the last logits along g (autograd, jvp)."""
    names = [k for k, _ in model.named_parameters()]
    primals = tuple(p.detach() for _, p in model.named_parameters())
    tangents = tuple(direction[k] for k in names)

    def logits(*ps: torch.Tensor) -> torch.Tensor:
        return functional_call(model, dict(zip(names, ps, strict=True)), (input_ids,))[:, -1]

    # forward-mode AD through attention needs the math kernel (the fused CPU one has no jvp)
    with sdpa_kernel(SDPBackend.MATH):
        _, derivative = jvp(logits, primals, tangents)
    return lam * derivative
