"""ImgCoT's small models (reconstructed, specs/imgcot.md §2 and §5): autoencoder and reasoner.

- `CoTEncoder`: a GRU over the CoT's **text** tokens giving k latents z ∈ ℝ^{k×d_z}. Both
  autoencoders use it on byte-identical inputs, so only the reconstruction target differs (the
  paper's manipulation).
- `ImageDecoder`: z → pixel logits of the rendered CoT (ImgCoT; binary cross-entropy).
- `TextDecoder`: z → per-position token logits of the CoT (the text-target baseline).
- `Reasoner`: a GRU that reads the question, emits k latent vectors autoregressively (its last
  hidden state through a projection head; each prediction fed back detached, as Render-of-
  Thought's code does), then text (kept steps, or the whole CoT for explicit CoT) and the answer.
  With k = 0 and no text it is the no-CoT arm; with k = 0 and the CoT as text it is explicit CoT.

The paper's encoder, decoder, k and reasoner were not read: every size and layer here is ours.
"""

from __future__ import annotations

import torch
from torch import nn

from harness.suites.imgcot.problems import ANS, VOCAB

V = len(VOCAB)
EMBED = 64  # token embedding width (ours)


class CoTEncoder(nn.Module):
    """CoT tokens → k latents."""

    def __init__(self, k: int, d_z: int, hidden: int) -> None:
        """A GRU over the tokens; its final state → k·d_z."""
        super().__init__()
        self.k, self.d_z = k, d_z
        self.emb = nn.Embedding(V, EMBED)
        self.gru = nn.GRU(EMBED, hidden, batch_first=True)
        self.out = nn.Linear(hidden, k * d_z)

    def forward(self, cot: torch.Tensor) -> torch.Tensor:
        """(B, T) token ids → (B, k, d_z)."""
        _, h = self.gru(self.emb(cot))  # h: (1, B, hidden)
        return self.out(h[0]).view(-1, self.k, self.d_z)  # (B, k, d_z)


def _mlp(d_in: int, hidden: int, d_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                         nn.Linear(hidden, d_out))  # fmt: skip


class ImageDecoder(nn.Module):
    """z → pixel logits (ImgCoT's target: the rendered CoT)."""

    def __init__(self, k: int, d_z: int, hidden: int, height: int, width: int) -> None:
        """An MLP to height·width logits."""
        super().__init__()
        self.shape = (height, width)
        self.mlp = _mlp(k * d_z, hidden, height * width)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """(B, k, d_z) → (B, H, W) logits."""
        return self.mlp(z.flatten(1)).view(-1, *self.shape)  # (B, H, W)


class TextDecoder(nn.Module):
    """z → token logits at each CoT position (the text-target baseline)."""

    def __init__(self, k: int, d_z: int, hidden: int, length: int) -> None:
        """An MLP to length·V logits."""
        super().__init__()
        self.length = length
        self.mlp = _mlp(k * d_z, hidden, length * V)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """(B, k, d_z) → (B, T, V) logits."""
        return self.mlp(z.flatten(1)).view(-1, self.length, V)  # (B, T, V)


class Reasoner(nn.Module):
    """Question → k latents (fed back detached) → text → answer."""

    def __init__(self, k: int, d_z: int, hidden: int) -> None:
        """Token and latent inputs into one GRU; a latent head and a token head on its state."""
        super().__init__()
        self.k = k
        self.emb = nn.Embedding(V, EMBED)
        self.latent_in = nn.Linear(d_z, EMBED)
        self.gru = nn.GRU(EMBED, hidden, batch_first=True)
        self.head = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.GELU(),
                                  nn.Linear(hidden, d_z))  # fmt: skip
        self.lm = nn.Linear(hidden, V)

    def latents(self, question: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Read the question, emit k latents: (ẑ (B, k, d_z), last output (B, H), state)."""
        out, h = self.gru(self.emb(question))  # out: (B, Tq, H)
        o = out[:, -1]  # (B, H)
        zs = []
        for _ in range(self.k):
            z = self.head(o)  # (B, d_z)
            zs.append(z)
            step, h = self.gru(self.latent_in(z.detach()).unsqueeze(1), h)  # (B, 1, H)
            o = step[:, 0]
        z_hat = torch.stack(zs, 1) if zs else o.new_zeros(o.shape[0], 0, 1)  # (B, k, d_z)
        return z_hat, o, h

    def forward(
        self, question: torch.Tensor, text_in: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced text: ẑ (B, k, d_z) and logits (B, T + 1, V) for text_in + answer."""
        z_hat, o, h = self.latents(question)
        out, _ = self.gru(self.emb(text_in), h)  # (B, T, H)
        logits = self.lm(torch.cat([o.unsqueeze(1), out], 1))  # (B, T + 1, V)
        return z_hat, logits

    @torch.no_grad()
    def generate(self, question: torch.Tensor, max_text: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Greedy: latents, then text until <ans> (forced after max_text tokens), then the answer.

        Returns the answer digit (B,) and the text tokens emitted before <ans> (B,).
        """
        _, o, h = self.latents(question)
        batch = question.shape[0]
        answer = torch.full((batch,), -1, dtype=torch.long)
        emitted = torch.zeros(batch, dtype=torch.long)
        done = torch.zeros(batch, dtype=torch.bool)
        for t in range(max_text + 1):
            tok = self.lm(o).argmax(-1)  # (B,)
            tok = torch.where(done | (t == max_text), torch.full_like(tok, ANS), tok)
            emitted += (~done & (tok != ANS)).long()
            step, h = self.gru(self.emb(tok).unsqueeze(1), h)
            o = step[:, 0]
            now = ~done & (tok == ANS)
            answer = torch.where(now, self.lm(o)[:, :10].argmax(-1), answer)  # a digit
            done |= now
            if bool(done.all()):
                break
        return answer, emitted
