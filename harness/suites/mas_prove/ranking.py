"""The verifier's ranking: parsing an LLM judge's `<ranking>` and the toy verification model.

`parse_ranking` follows the authors' rule (spec §2): the text between the first `<ranking>` and
`</ranking>`, split on commas, 1-based numbers made 0-based; anything but a permutation of
0..N-1 falls back to the identity ranking. `toy_step_accuracy` is the spec's toy model (§3,
derived by the spec's authors, not the paper's).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_RANKING = re.compile(r"<ranking>(.*?)</ranking>", re.DOTALL)


@dataclass(frozen=True)
class ParsedRanking:
    """A judge's ranking as parsed, and whether it fell back to the identity."""

    order: tuple[int, ...]  # best-first permutation of 0-based candidate indices
    fallback: str  # why the identity was used ("" when the judge's ranking was accepted)


def parse_ranking(text: str, n: int) -> ParsedRanking:
    """The best-first 0-based ranking of `n` candidates from a judge's reply.

    Args:
        text: The judge's reply, which should hold `<ranking>i,j,k</ranking>` with 1-based
            candidate numbers.
        n: The number of candidates.

    Returns:
        The ranking, or the identity [0, 1, ..., n-1] with the reason when the tag is missing,
        a number does not parse, or the numbers are not a permutation of 1..n.

    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    identity = tuple(range(n))
    found = _RANKING.search(text or "")
    if found is None:
        return ParsedRanking(identity, "no <ranking> tag")
    try:
        order = tuple(int(part.strip()) - 1 for part in found.group(1).split(","))
    except ValueError:
        return ParsedRanking(identity, f"not a list of numbers: {found.group(1)[:40]!r}")
    if sorted(order) != list(identity):
        return ParsedRanking(identity, f"not a permutation of 1..{n}: {found.group(1)[:40]!r}")
    return ParsedRanking(order, "")


def toy_step_accuracy(p: float, a: float, n: int) -> float:
    """P(kept step correct) = p^N + (1 - p^N - (1 - p)^N) * a (spec §3, the toy model).

    Each of `n` candidates is independently correct with probability `p`; when the set is mixed
    the verifier puts a correct candidate first with probability `a`.

    Notes:
        A verifier no better than chance on mixed sets (a = E[fraction correct | mixed]) gives
        exactly p: the search helps only through the verifier's skill. p = 0.6, N = 3, a = 0.8
        gives 0.792; three such steps that must all be right, 0.792**3 = 0.4968.

    """
    if not (0 <= p <= 1 and 0 <= a <= 1):
        raise ValueError(f"p and a must be in [0, 1], got p={p}, a={a}")
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    all_right = p**n
    mixed = 1 - all_right - (1 - p) ** n
    return all_right + mixed * a


def chance_skill(p: float, n: int) -> float:
    """E[fraction of correct candidates | the set is mixed]: a verifier picking at random."""
    mixed = 1 - p**n - (1 - p) ** n
    if mixed <= 0:
        return math.nan
    # E[K/N; 0 < K < N] with K ~ Binomial(N, p), divided by P(0 < K < N)
    return (p - p**n) / mixed
