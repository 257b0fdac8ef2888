"""The delayed-cue world of specs/protokv.md §5 (ours, reconstructed) and its fixed reader.

A seed draws a world: a random orthonormal basis of R^d whose first direction u is "cue-ness",
the next J are the answer classes e_1..e_J and the rest span the scene space; and a set of
scenes, each P vectors of norm about 1 in the scene space. An episode is a stream of frames:
a Markov chain over scenes (stay with probability 0.9, else a uniformly chosen other scene),
each token its scene's vector plus N(0, σ²I); at frame `cue_at`, for `cue_frames` consecutive
frames, one token position (the same in each) holds u + e_j + noise for the episode's class j.

The reader is fixed: keys = values = tokens, logit = scale·⟨k, u⟩ + bias, r = Σ softmax·v, and
the answer is argmax_j ⟨r, e_j⟩. Chance is 1/J.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.suites.protokv.policies import Exposed


@dataclass(frozen=True, slots=True)
class WorldConfig:
    """The world's sizes (spec §5)."""

    dim: int = 32  # d
    tokens: int = 4  # P tokens per frame
    classes: int = 4  # J cue classes
    scenes: int = 6  # scenes of the Markov chain
    stay: float = 0.9  # probability the chain stays in its scene
    noise: float = 0.07  # token noise standard deviation
    cue_at: int = 40  # t_c, the first cue frame (0-based)
    cue_frames: int = 3  # consecutive cue frames
    scale: float = 8.0  # the reader's logit scale on ⟨k, u⟩

    @property
    def cue_end(self) -> int:
        """Index of the last cue frame."""
        return self.cue_at + self.cue_frames - 1

    def frames_for(self, delay: int) -> int:
        """Frames streamed before a query at this delay (the last cue frame plus `delay`)."""
        return self.cue_end + 1 + delay


@dataclass(frozen=True)
class World:
    """One seed's world."""

    config: WorldConfig
    cue: np.ndarray  # (D,) u
    classes: np.ndarray  # (J, D) e_j
    scenes: np.ndarray  # (scenes, P, D)


@dataclass(frozen=True)
class Episode:
    """One stream and its answer."""

    frames: np.ndarray  # (T, P, D) tokens
    label: int  # j
    position: int  # the cue's token position


def make_world(seed: int, config: WorldConfig) -> World:
    """The basis and scenes of a seed."""
    c = config
    if c.dim < 1 + c.classes + 1:
        raise ValueError(f"dim {c.dim} leaves no scene space after u and {c.classes} classes")
    rng = np.random.default_rng([seed, 0])
    basis, _ = np.linalg.qr(rng.standard_normal((c.dim, c.dim)))  # columns orthonormal
    scene_space = basis[:, 1 + c.classes :]  # (D, d − 1 − J)
    coef = rng.standard_normal((c.scenes, c.tokens, scene_space.shape[1]))
    scenes = coef @ scene_space.T / np.sqrt(scene_space.shape[1])  # norm about 1
    return World(c, basis[:, 0], basis[:, 1 : 1 + c.classes].T, scenes)


def episode(world: World, rng: np.random.Generator, frames: int) -> Episode:
    """A stream of `frames` frames with its cue."""
    c = world.config
    state = np.empty(frames, dtype=int)
    state[0] = rng.integers(c.scenes)
    for t in range(1, frames):
        if rng.random() < c.stay:
            state[t] = state[t - 1]
        else:
            state[t] = (state[t - 1] + 1 + rng.integers(c.scenes - 1)) % c.scenes
    tokens = world.scenes[state] + c.noise * rng.standard_normal((frames, c.tokens, c.dim))
    label, position = int(rng.integers(c.classes)), int(rng.integers(c.tokens))
    cue = world.cue + world.classes[label]
    end = min(frames, c.cue_at + c.cue_frames)
    tokens[c.cue_at : end, position] = cue + c.noise * rng.standard_normal((end - c.cue_at, c.dim))
    return Episode(tokens, label, position)


def read(world: World, exposed: Exposed) -> int:
    """The fixed reader's answer from what a policy exposes."""
    logits = world.config.scale * exposed.keys @ world.cue + exposed.bias  # (N,)
    w = np.exp(logits - logits.max())
    r = (w / w.sum()) @ exposed.values  # (D,)
    return int(np.argmax(world.classes @ r))
