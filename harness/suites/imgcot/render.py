"""Rendering a chain of thought as an image: ImgCoT's reconstruction target (reconstructed).

The paper renders the CoT as an image and trains latents to reconstruct it (arXiv 2601.22730,
abstract). How it renders was not read: the font, size, canvas and layout here are ours
(specs/imgcot.md §2, reconstructed step 1): Pillow's built-in font (`ImageFont.load_default(size)`,
shipped inside Pillow, no download), one step per line, white on black, a fixed canvas, pixels
in [0, 1]. The paper's adaptive font size (secondhand) is not built: the canvas is fixed, and a
canvas too small for the CoT is refused (`check_canvas`) rather than shrunk into.

Determinism: the same string gives the same array for a fixed Pillow version (FreeType
rasterises the same glyphs). Arrays are never compared across Pillow versions; the version is
recorded in each run's metadata.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np
import PIL
from PIL import Image, ImageDraw, ImageFont

from harness.suites.imgcot.problems import OPS, STEPS, apply

MARGIN = 1  # px of black around the text's origin (reconstructed)
SPACING = 2  # px between lines (reconstructed)


@dataclass(frozen=True)
class Canvas:
    """The fixed canvas every CoT is drawn on."""

    width: int  # px
    height: int  # px
    font_size: int  # Pillow's built-in font, in px

    def __post_init__(self) -> None:
        """Refuse sizes that cannot hold a pixel."""
        if self.width < 1 or self.height < 1 or self.font_size < 1:
            raise ValueError(f"canvas sizes must be >= 1, got {self}")


@functools.lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def text_box(text: str, font_size: int) -> tuple[int, int, int, int]:
    """The text's bounding box (left, top, right, bottom) when drawn at the margin."""
    draw = ImageDraw.Draw(Image.new("L", (1, 1)))
    box = draw.multiline_textbbox((MARGIN, MARGIN), text, font=_font(font_size), spacing=SPACING)
    return tuple(int(v) for v in box)  # type: ignore[return-value]


def render(text: str, canvas: Canvas) -> np.ndarray:
    """The text drawn white on black on the canvas: float32 (height, width) in [0, 1]."""
    image = Image.new("L", (canvas.width, canvas.height), 0)
    draw = ImageDraw.Draw(image)
    draw.multiline_text((MARGIN, MARGIN), text, fill=255, font=_font(canvas.font_size),
                        spacing=SPACING)  # fmt: skip
    return np.asarray(image, dtype=np.float32) / 255.0  # (H, W)


@functools.lru_cache(maxsize=8)
def required_canvas(font_size: int) -> tuple[int, int]:
    """The smallest (width, height) that holds every CoT the task can write, at this font size.

    Exact over the task: the widest of all 5,400 possible step lines (two surface forms of
    10 × 3 × 9 × 10 digit choices), and the height of three lines of the tallest glyphs.
    """
    widest = max(
        text_box(line, font_size)[2]
        for x, op, b in itertools.product(range(10), OPS, range(1, 10))
        for line in (f"{x}{op}{b}={apply(x, op, b)}", f"{apply(x, op, b)}={x}{op}{b}")
    )
    tall = "\n".join(["0123456789" + "".join(OPS) + "=;"] * STEPS)
    return widest, text_box(tall, font_size)[3]


def fits(text: str, canvas: Canvas) -> bool:
    """Whether the text's bounding box lies within the canvas."""
    left, top, right, bottom = text_box(text, canvas.font_size)
    return left >= 0 and top >= 0 and right <= canvas.width and bottom <= canvas.height


def check_canvas(canvas: Canvas) -> str | None:
    """None if every CoT of the task fits the canvas, else why not (one line)."""
    width, height = required_canvas(canvas.font_size)
    if canvas.width >= width and canvas.height >= height:
        return None
    return (
        f"a {canvas.width}x{canvas.height} canvas is too small for the CoT at font size "
        f"{canvas.font_size}: it needs at least {width}x{height} px"
    )


def pillow_version() -> str:
    """The Pillow that rasterised the images (renders compare only within one version)."""
    return PIL.__version__
