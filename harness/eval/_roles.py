"""Run a `harness.role_eval.RoleEval`: each role's model built as `harness eval` builds it."""

from __future__ import annotations

from harness.errors import HarnessUsageError
from harness.eval._build import build_models
from harness.role_eval import RoleEval


def run_roles(spec: RoleEval) -> str:
    """Build each role's model, run the task once with them; the finished log's path.

    A run that did not finish is a usage error naming inspect's first line and the log folder.
    """
    from inspect_ai import eval as inspect_eval

    models = {role: build_models((m.spec,), m.args, None)[0] for role, m in spec.roles.items()}
    (log,) = inspect_eval(
        spec.task,
        model=next(iter(models.values())),
        model_roles=models,
        log_dir=spec.log_dir,
        score_on_error=True,
        fail_on_error=False,
        display=spec.display,  # type: ignore[arg-type]
        max_connections=spec.max_connections,
    )
    if log.status != "success" or not log.location:
        message = log.error.message.splitlines()[0] if log.error else log.status
        raise HarnessUsageError(
            f"the {spec.name} eval did not finish ({message}); see {spec.log_dir}"
        )
    return log.location
