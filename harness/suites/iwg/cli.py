"""`harness iwg generate` and `harness iwg synthesize`: make IWG instances.

The catalog names this group (`Suite.commands`); `harness` loads it on first use. Heavy imports
happen inside the commands. `synthesize` builds no model: it returns a `RoleEval` (the task and
each role's model spec), which the CLI runs as `harness eval` builds models.
"""

from __future__ import annotations

from pathlib import Path

import click

from harness.errors import HarnessUsageError, exit_on_usage_error
from harness.role_eval import ModelRole, RoleEval

ROLES = ("scout", "wrapper", "committee")


@click.group("iwg")
def iwg() -> None:
    """Make IWG instances: procedurally from a seed, or synthesised by models."""


@iwg.command("generate")
@click.option("--n", "n", type=int, default=100, show_default=True, help="Instances to make.")
@click.option("--seed", type=int, default=0, show_default=True, help="Generator seed.")
@click.option("-o", "--output", "out", required=True, help="Folder to write instances into.")
@exit_on_usage_error
def generate_command(n: int, seed: int, out: str) -> None:
    """Write N seeded procedural instances (no LLM) as OUT/<id>.json."""
    from harness.paths import writable_dir
    from harness.suites.iwg.generator import generate
    from harness.suites.iwg.schema import save_instance

    if not 1 <= n <= 10_000:
        raise HarnessUsageError(f"--n must be 1..10000, got {n}")
    folder = writable_dir(out, "-o")
    for inst in generate(n, seed):
        save_instance(inst, folder)
    click.echo(f"wrote {n} instances to {folder}")


def _role_args(items: tuple[str, ...]) -> dict[str, dict]:
    from harness.kv_args import parse_kv

    out: dict[str, dict] = {r: {} for r in ROLES}
    for item in items:
        role, dot, rest = item.partition(".")
        if not dot or role not in ROLES:
            raise HarnessUsageError(
                f"-M {item!r}: write ROLE.KEY=VALUE with ROLE one of {', '.join(ROLES)}"
            )
        out[role].update(parse_kv([rest], "-M"))
    return out


@iwg.command("synthesize")
@click.option("--seeds", required=True, help="JSONL of seeds {id, query, answer, ...}.")
@click.option("--scout", required=True, help="Model spec of the Scout (plans the DAG).")
@click.option("--wrapper", required=True, help="Model spec of the Wrapper (environments).")
@click.option("--committee", required=True, help="Comma-separated model specs of the committee.")
@click.option("-o", "--output", "out", required=True, help="Folder for instances and rejects.")
@click.option("-M", "model_args", multiple=True, metavar="ROLE.KEY=VALUE", help="Model argument.")
@click.option("--log-dir", default=None, help="Where the synthesis log goes (default OUT/logs).")
@click.option(
    "--display", type=click.Choice(["full", "rich", "plain", "log", "none"]), default=None
)
@exit_on_usage_error
def synthesize_command(
    seeds: str,
    scout: str,
    wrapper: str,
    committee: str,
    out: str,
    model_args: tuple[str, ...],
    log_dir: str | None,
    display: str | None,
) -> RoleEval:
    """Synthesise instances from seeds: Scout, Wrapper and committee, as one inspect eval."""
    from harness.paths import writable_dir
    from harness.suites.iwg.synthesis import iwg_synthesis, write_outputs

    members = [c.strip() for c in committee.split(",") if c.strip()]
    if not members:
        raise HarnessUsageError("--committee needs at least one model spec")
    args = _role_args(model_args)
    folder = writable_dir(out, "-o")
    logs = writable_dir(log_dir or Path(folder) / "logs", "--log-dir")
    task = iwg_synthesis(seeds=str(Path(seeds).resolve()), committee=len(members))
    roles = {
        "scout": ModelRole(scout, args["scout"]),
        "wrapper": ModelRole(wrapper, args["wrapper"]),
    }
    for k, spec in enumerate(members, 1):
        roles[f"committee_{k}"] = ModelRole(spec, args["committee"])

    def finish(location: str) -> str:
        return write_outputs(location, Path(folder)).summary()

    return RoleEval("synthesis", task, roles, str(logs), finish, display=display)
