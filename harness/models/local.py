"""`local/NAME_OR_PATH`: an in-process torch provider with micro-batching and token log-probs.

NAME is a built-in tiny model (trained from scratch on first use, cached under the harness cache
folder) or PATH is a Hugging Face checkpoint folder on disk, loaded with `local_files_only`.

Model args (`-M key=value`): `batch_size` (default 64), `device` (default cuda if available,
else cpu), `dtype` (`float32`, `bfloat16`, `float16`), `max_tokens` (default 256, when the task
sets none). Weights load once per process and are shared by every task that uses them.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    Logprob,
    Logprobs,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    TopLogprob,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from harness.errors import HarnessUsageError
from harness.models.batch_generate import GenRequest, GenResult, generate_batch
from harness.models.micro_batcher import MicroBatcher

BUILTIN = ("tiny-arith",)

_loaded: dict[tuple[str, str, str], tuple[Any, Any, MicroBatcher[GenRequest, GenResult]]] = {}
_load_lock = threading.Lock()


def resolve_checkpoint(name: str) -> Path:
    """The checkpoint folder for a built-in name or a path, training a built-in if needed."""
    if name == "tiny-arith":
        from harness.models.tiny_arith import checkpoint

        return checkpoint()
    path = Path(name).expanduser()
    if not (path / "config.json").is_file():
        raise HarnessUsageError(
            f"local/{name}: not a built-in model ({', '.join(BUILTIN)}) nor a folder holding a "
            f"Hugging Face checkpoint (config.json); give a built-in name or a checkpoint path"
        )
    return path


def render_prompt(tokenizer: Any, messages: list[ChatMessage]) -> str:
    """The prompt text: the tokenizer's chat template if it has one, else the texts joined."""
    if tokenizer.chat_template:
        chat = [{"role": m.role, "content": m.text} for m in messages]
        return tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    return "\n\n".join(m.text for m in messages)


class LocalTorchAPI(ModelAPI):
    """Generates with a local transformers causal LM through a shared micro-batcher."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),
        batch_size: int = 64,
        device: str | None = None,
        dtype: str = "float32",
        max_tokens: int = 256,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        import torch

        if dtype not in ("float32", "bfloat16", "float16"):
            raise HarnessUsageError(
                f"local/: dtype must be float32, bfloat16 or float16, got {dtype!r}"
            )
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.default_max_tokens = int(max_tokens)
        self.batch_size = int(batch_size)
        path = resolve_checkpoint(model_name)
        key = (str(path.resolve()), self.device, dtype)
        with _load_lock:
            if key not in _loaded:
                _loaded[key] = self._load(path, getattr(torch, dtype))
        self.model, self.tokenizer, self.batcher = _loaded[key]

    def _load(self, path: Path, dtype: Any) -> tuple[Any, Any, MicroBatcher]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=dtype)
        model.to(self.device).eval()
        batcher: MicroBatcher[GenRequest, GenResult] = MicroBatcher(
            lambda reqs: generate_batch(model, tokenizer, reqs),
            key=GenRequest.group_key,
            max_batch=self.batch_size,
        )
        return model, tokenizer, batcher

    def max_connections(self) -> int:
        """Enough concurrent samples to fill two batches."""
        return 2 * self.batch_size

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        """Queue the prompt with the micro-batcher and wrap its completion."""
        request = GenRequest(
            prompt=render_prompt(self.tokenizer, input),
            max_new_tokens=config.max_tokens or self.default_max_tokens,
            temperature=config.temperature or 0.0,
            top_p=config.top_p,
            logprobs=bool(config.logprobs),
            top_logprobs=config.top_logprobs or 0,
            stop=tuple(config.stop_seqs or ()),
        )
        res = await self.batcher.submit(request)
        logprobs = None
        if res.logprobs is not None:
            logprobs = Logprobs(
                content=[
                    Logprob(
                        token=t.token,
                        logprob=t.logprob,
                        top_logprobs=[TopLogprob(token=a, logprob=lp) for a, lp in t.top] or None,
                    )
                    for t in res.logprobs
                ]
            )
        return ModelOutput(
            model=self.model_name,
            choices=[
                ChatCompletionChoice(
                    message=ChatMessageAssistant(
                        content=res.text, model=self.model_name, source="generate"
                    ),
                    stop_reason=res.stop_reason,  # type: ignore[arg-type]
                    logprobs=logprobs,
                )
            ],
            usage=ModelUsage(
                input_tokens=res.input_tokens,
                output_tokens=res.output_tokens,
                total_tokens=res.input_tokens + res.output_tokens,
            ),
        )
