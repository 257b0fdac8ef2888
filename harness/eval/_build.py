"""Build what `harness eval` runs: the suite's tasks from its -T arguments, the models from specs.

Every -T and -M value is typed by the parameter it fills (`harness.eval._typed_args`); a key no
task or provider takes, a provider that cannot start or a spec without a provider is one line.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessUsageError
from harness.eval._checks import check_distinct, check_hub_reachable, one_line, provider_start_error
from harness.eval._typed_args import typed

if TYPE_CHECKING:
    from harness.suites.catalog import Suite


def build_tasks(
    suite: Suite, task_args: dict[str, Any], data_dir: str | None, max_work: float | None = None
) -> list[Any]:
    """Instantiate the suite's tasks, checking every -T key against the tasks' parameters.

    A key goes to each task that takes it; one that no task of the suite takes is an error.
    Each task checks its arguments' ranges and its work estimate (against `max_work`, else its
    default limit) before it builds a sample (`harness.suites.arg_ranges`).
    """
    from harness.suites.arg_ranges import work_limit

    functions = suite.tasks
    params = {fn: inspect.signature(fn).parameters for fn in functions}
    known = dict.fromkeys(p for ps in params.values() for p in ps)  # in signature order
    unknown = sorted(set(task_args) - set(known))
    if unknown:
        names = "', '".join(fn.__name__ for fn in functions)
        raise HarnessUsageError(
            f"suite '{suite.name}' task '{names}' has no argument "
            f"{', '.join(repr(u) for u in unknown)}; its -T arguments are: "
            f"{', '.join(p for p in known if p != 'data_dir') or '(none)'}"
        )
    tasks = []
    for fn in functions:
        args = typed(fn, {k: v for k, v in task_args.items() if k in params[fn]}, "-T")
        if "data_dir" in params[fn] and data_dir is not None:
            args["data_dir"] = data_dir
        try:
            with work_limit(max_work):
                tasks.append(fn(**args))
        except ValueError as ex:  # inspect's "dataset is empty", a task's own range check
            raise HarnessUsageError(
                f"suite '{suite.name}' task '{fn.__name__}' cannot be built from its -T "
                f"arguments: {one_line(str(ex))}"
            ) from None
    return tasks


def build_models(specs: tuple[str, ...], model_args: dict[str, Any], seed: int | None) -> list[Any]:
    """Resolve model specs to inspect `Model`s, turning unknown providers into usage errors."""
    from inspect_ai.model import GenerateConfig, get_model

    check_distinct(specs)
    models = []
    for spec in specs:
        provider, sep, name = spec.partition("/")
        if not sep or not provider or not name:
            raise HarnessUsageError(
                f"model spec '{spec}' needs the form PROVIDER/NAME, for example local/tiny-arith"
            )
        args = provider_args(provider, spec, model_args)
        if provider == "replay" and Path(name).expanduser().exists():
            # the identity is the absolute path: a retry or `inspect score` from another folder
            # finds the file, and one relative name used in two folders is not one model
            spec = f"replay/{Path(name).expanduser().resolve()}"
        if provider == "hf":
            check_hub_reachable(spec)
        try:
            models.append(get_model(spec, config=GenerateConfig(seed=seed), **args))
        except ValueError as ex:
            if "not recognized" not in str(ex) and "Model name" not in str(ex):
                raise
            raise HarnessUsageError(
                f"unknown model provider '{provider}' in '{spec}'; use local/, replay/, "
                f"scripted/ or an inspect-ai provider such as openai/, anthropic/, hf/, vllm/"
            ) from None
        except TypeError as ex:
            raise HarnessUsageError(f"bad -M argument for {spec}: {ex}") from None
        except HarnessUsageError:
            raise
        except Exception as ex:  # an API key, a package or a connection missing
            from harness.models.providers import provider_class

            if provider_class(provider) is not None:
                raise  # our own providers check their input; anything else is a bug
            raise provider_start_error(spec, ex) from None
    return models


def provider_args(provider: str, spec: str, model_args: dict[str, Any]) -> dict[str, Any]:
    """-M arguments typed by a harness provider's constructor; unknown keys listed as errors.

    inspect-ai's own providers take their arguments as read.
    """
    from harness.models.providers import provider_class

    cls = provider_class(provider)
    if cls is None:
        return model_args
    params = inspect.signature(cls.__init__).parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    valid = [k for k in params if k not in ("self", "model_name", "config", "base_url", "api_key")]
    unknown = sorted(set(model_args) - set(params))
    if unknown and not takes_any:
        raise HarnessUsageError(
            f"{spec} has no -M argument {', '.join(repr(u) for u in unknown)}; "
            f"its -M arguments are: {', '.join(valid) or '(none)'}"
        )
    return typed(cls, model_args, "-M")


def method_descriptions(models: list[Any]) -> dict[str, dict[str, Any]]:
    """Settings (prompt version, what is reconstructed) of each method-wrapped model, by name."""
    return {str(m): m.api.describe() for m in models if callable(getattr(m.api, "describe", None))}


def with_budget_recording(task: Any) -> Any:
    """The task with a last solver step that copies the sample's method budgets to metadata."""
    from inspect_ai import task_with
    from inspect_ai.solver import chain

    from harness.models.methods.record import record_method_budgets

    return task_with(task, solver=chain(task.solver, record_method_budgets()))
