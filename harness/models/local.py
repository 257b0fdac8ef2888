"""`local/NAME_OR_PATH`: an in-process torch provider with micro-batching and token log-probs.

NAME is a built-in model, registered as kind "local-model" (`harness.models.builtin`: tiny
models trained from scratch on first use and cached under the harness cache folder), or PATH is a
Hugging Face checkpoint folder on disk, loaded with `local_files_only`. A built-in's factory takes
the `-M` arguments it understands; one that answers by itself (`local/team-moe`, `-M seed=0
decoding=vanilla|team|... preset=quick|tiny`; `local/l2a-recall`, `-M variant=l2a lam=1e-5 seed=0
preset=quick prune=0`) is used as it is, and the rest of this module is for causal LMs.

Model args (`-M key=value`): `batch_size` (default 64), `device` (default cuda if available,
else cpu), `dtype` (`float32`, `bfloat16`, `float16`), `max_tokens` (default 256, when the task
sets none), `truncate` (`none`, default, or `left`). Weights load once per process and are shared
by every task that uses them.

A prompt that with its token limit does not fit the model's context (`n_positions` or
`max_position_embeddings`) fails its own call with a message saying so; it is checked before
batching, so it never fails the other prompts of its micro-batch. With `truncate=left` such a
prompt keeps its last tokens instead, and the output's metadata records how many were dropped.
"""

from __future__ import annotations

import difflib
import inspect
import threading
import typing
from collections.abc import Callable
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

from harness import registry
from harness.errors import HarnessUsageError
from harness.models.batch_generate import GenRequest, GenResult, generate_batch
from harness.models.micro_batcher import MicroBatcher

LOCAL_MODEL = "local-model"  # the registry kind of the built-ins (harness.models.builtin)
# inspect's model-info lookup builds a model from its name alone with this key, during evals, to
# read its canonical name (inspect_ai.model._model_info); a built-in would then load, or train,
# its default checkpoint, whatever -M args the eval was given
MODEL_INFO_LOOKUP = "__model_info_lookup__"

_loaded: dict[tuple[str, str, str], tuple[Any, Any, MicroBatcher[GenRequest, GenResult]]] = {}
_load_lock = threading.Lock()


def _factory(name: str) -> Callable[..., Any] | None:
    """The registered factory of a built-in name; None for anything else (a path)."""
    if registry.target(LOCAL_MODEL, name) is None:
        return None
    return registry.get(LOCAL_MODEL, name)


def _params(factory: Callable[..., Any] | None) -> tuple[str, ...]:
    return () if factory is None else tuple(inspect.signature(factory).parameters)


def resolve_checkpoint(name: str) -> Path:
    """The checkpoint folder for a built-in name or a path, training a built-in if needed."""
    factory = _factory(name)
    if factory is not None:
        if _params(factory):  # it takes -M arguments: it builds a model that answers by itself
            raise HarnessUsageError(
                f"local/{name} is a built-in that answers by itself, not a causal-LM checkpoint; "
                f"give a checkpoint model such as local/tiny-arith"
            )
        return factory()
    path = Path(name).expanduser()
    if not (path / "config.json").is_file():
        known = registry.names(LOCAL_MODEL)
        near = difflib.get_close_matches(name, known, n=1)
        hint = f"did you mean local/{near[0]}? " if near else ""
        raise HarnessUsageError(
            f"local/{name}: not a built-in model ({', '.join(known)}) nor a folder holding a "
            f"Hugging Face checkpoint (config.json); {hint}give a built-in name or a checkpoint "
            f"path"
        )
    return path


def build(name: str, args: dict[str, Any]) -> Any:
    """`local/NAME`: its checkpoint folder, or the model that answers by itself.

    `args` are the -M arguments beyond local/'s own; the built-in's factory must take each one.
    """
    factory = _factory(name)
    takes = _params(factory)
    unknown = sorted(set(args) - set(takes))
    if unknown:
        raise HarnessUsageError(
            f"local/{name} has no -M argument {', '.join(repr(u) for u in unknown)}; "
            f"its -M arguments are: {', '.join((*_own_args(), *takes))}"
        )
    if factory is None or not takes:
        return resolve_checkpoint(name)
    hints = typing.get_type_hints(factory.__init__ if isinstance(factory, type) else factory)
    return factory(**{k: _number(name, k, v, hints.get(k)) for k, v in args.items()})


def _own_args() -> tuple[str, ...]:
    """The -M arguments of `local/` itself (batch_size, dtype, ...)."""
    params = inspect.signature(LocalTorchAPI.__init__).parameters
    skip = ("self", "model_name", "base_url", "api_key", "config")
    return tuple(p for p, v in params.items() if p not in skip and v.kind is not v.VAR_KEYWORD)


def _number(name: str, key: str, value: Any, kind: Any) -> Any:
    """`value` as the int or float the factory declares; anything else as given."""
    if kind not in (int, float) or (type(value) is kind) or (kind is float and type(value) is int):
        return value
    try:
        out = kind(value)
        if isinstance(value, bool) or (isinstance(value, float) and out != value):
            raise ValueError
    except (TypeError, ValueError):
        raise HarnessUsageError(
            f"local/{name}: -M {key} must be {'an int' if kind is int else 'a float'}, "
            f"got {value!r}"
        ) from None
    return out


def load_causal_lm(path: Path, **kwargs: Any) -> Any:
    """`AutoModelForCausalLM.from_pretrained(path)`, refused if any weight came from a fresh init.

    transformers fills a weight the checkpoint lacks with a random init and only logs it; scoring
    with such a model gives numbers that look like results. A tied head is not missing: the load
    ties it before reporting.
    """
    from transformers import AutoModelForCausalLM

    model, info = AutoModelForCausalLM.from_pretrained(
        path, local_files_only=True, output_loading_info=True, **kwargs
    )
    if info["missing_keys"]:
        missing = sorted(info["missing_keys"])
        raise HarnessUsageError(
            f"checkpoint {path}: {len(missing)} weight(s) not in its files ("
            f"{', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); they would run "
            f"from a random init, so the model is refused"
        )
    return model


def render_prompt(tokenizer: Any, messages: list[ChatMessage]) -> str:
    """The prompt text: the tokenizer's chat template if it has one, else the texts joined.

    A trailing assistant message is continued, not answered: that is how the method wrappers
    (`suco/`) have a model go on with its own reasoning.
    """
    if tokenizer.chat_template:
        chat = [{"role": m.role, "content": m.text} for m in messages]
        if messages and messages[-1].role == "assistant":  # continue it (method wrappers do)
            return tokenizer.apply_chat_template(chat, tokenize=False, continue_final_message=True)
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
        truncate: str = "none",
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        import torch

        self.own: Any = None  # a built-in that is not a causal LM: it answers by itself
        self.batch_size = int(batch_size)
        if api_key == MODEL_INFO_LOOKUP:  # inspect resolving model info by name: load nothing
            return
        made = build(model_name, model_args)
        if not isinstance(made, Path):
            self.own = made
            return

        if dtype not in ("float32", "bfloat16", "float16"):
            raise HarnessUsageError(
                f"local/: dtype must be float32, bfloat16 or float16, got {dtype!r}"
            )
        if truncate not in ("none", "left"):
            raise HarnessUsageError(f"local/: truncate must be none or left, got {truncate!r}")
        self.truncate = truncate
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.default_max_tokens = int(max_tokens)
        path = made
        key = (str(path.resolve()), self.device, dtype)
        with _load_lock:
            if key not in _loaded:
                _loaded[key] = self._load(path, getattr(torch, dtype))
        self.model, self.tokenizer, self.batcher = _loaded[key]
        cfg = self.model.config
        self.context = getattr(cfg, "n_positions", None) or getattr(
            cfg, "max_position_embeddings", None
        )

    def _load(self, path: Path, dtype: Any) -> tuple[Any, Any, MicroBatcher]:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        model = load_causal_lm(path, dtype=dtype)
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
        if self.own is not None:
            return await self.own.generate(input, self.model_name)
        max_new = config.max_tokens or self.default_max_tokens
        prompt, dropped = self._fit(render_prompt(self.tokenizer, input), max_new)
        request = GenRequest(
            prompt=prompt,
            max_new_tokens=max_new,
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
        output = ModelOutput(
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
        if dropped:
            output.metadata = {"truncated_prompt_tokens": dropped}
        return output

    def _fit(self, prompt: str, max_new: int) -> tuple[str, int]:
        """The prompt, cut to its last tokens under `truncate=left`; raises if it cannot fit."""
        if not self.context:
            return prompt, 0
        special = self.tokenizer.chat_template is None  # as generate_batch tokenizes
        room = (
            self.context
            - max_new
            - len(self.tokenizer("", add_special_tokens=special)["input_ids"])
        )
        enc = self.tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
        n = len(enc["input_ids"])
        if n <= room:
            return prompt, 0
        if self.truncate != "left" or room < 1:
            raise ValueError(
                f"local/{self.model_name}: the prompt has {n} tokens and max_tokens is {max_new}, "
                f"more than the model's context of {self.context}; shorten the prompt or pass "
                f"-M truncate=left to keep its last tokens"
            )
        start = enc["offset_mapping"][n - room][0]
        return prompt[start:], n - room
