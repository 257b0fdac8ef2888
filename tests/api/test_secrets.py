"""A canary API key, given every way a user gives one, reaches no log, report, site or viewer file.

The key goes in the environment (`FAULTY_API_KEY`), in `-M api_key=` and in a `.env` file in the
working folder; the fault server refuses a request without it, so each run proves it was used.
Every file written is then searched for it, `.eval` logs (zips) member by member.
"""

from __future__ import annotations

import uuid
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.testing.fault_server import fault_server
from tests.api.helpers import SERVICE, harness_eval, model_spec, point_at

KEY_VAR = f"{SERVICE.upper()}_API_KEY"


def leaks(roots: list[Path], canary: str) -> list[str]:
    """Every file (or `.eval` member) under `roots` holding `canary`, as `path[!member]`."""
    needle = canary.encode()
    found = []
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            data = path.read_bytes()
            if needle in data:
                found.append(str(path))
            if zipfile.is_zipfile(path):
                with zipfile.ZipFile(path) as z:
                    found += [f"{path}!{m}" for m in z.namelist() if needle in z.read(m)]
    return found


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> tuple[list[Path], str]:
    """Logs from three runs (key in env, in -M, in .env), a report and a site with its viewer."""
    canary = f"sk-canary-{uuid.uuid4().hex}"
    root = tmp_path_factory.mktemp("secrets")
    logs = root / "logs"
    with pytest.MonkeyPatch.context() as mp, fault_server(api_key=canary) as server:
        task = ["--suite", "arith", "-T", "n=5", "--model", model_spec(server.port)]
        task += ["--max-retries", "1", "--attempt-timeout", "10"]  # a failure ends, not hangs
        mp.chdir(root)
        point_at(mp, server.base_url, canary)  # 1. in the environment
        rows = harness_eval(logs, *task, "-T", "seed=1")
        mp.setenv(KEY_VAR, "wrong")  # 2. in -M api_key=, which wins over the environment
        rows += harness_eval(logs, *task, "-T", "seed=2", "-M", f"api_key={canary}")
        mp.delenv(KEY_VAR)  # 3. in a .env file that inspect reads from the working folder
        (root / ".env").write_text(f"{KEY_VAR}={canary}\n")
        try:
            rows += harness_eval(logs, *task, "-T", "seed=3")
        finally:
            (root / ".env").unlink()
            mp.delenv(KEY_VAR, raising=False)
    assert [r["errors"] for r in rows] == [0, 0, 0]  # every request carried the key
    assert len(list(logs.glob("*.eval"))) == 3
    report, site = root / "report.html", root / "site"
    for args in (
        ["report", str(logs), "--format", "html", "-o", str(report)],
        ["report", str(logs), "-o", str(root / "report.md")],
        ["leaderboard", "build", str(logs), "-o", str(site)],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, (args, result.output, result.exception)
    assert list(site.rglob("*.eval")) or list(site.rglob("*.json")), "no viewer bundle written"
    return [root], canary


def test_the_canary_key_is_written_nowhere(outputs):
    roots, canary = outputs
    assert leaks(roots, canary) == []


@pytest.mark.parametrize("where", ["log-member", "report", "site-page"])
def test_a_planted_canary_is_found(outputs, where, tmp_path):
    """The control: the search finds the key once it is planted in one output."""
    (root,), canary = outputs
    if where == "log-member":
        log = next((root / "logs").glob("*.eval"))
        planted = tmp_path / log.name
        with zipfile.ZipFile(log) as src, zipfile.ZipFile(planted, "w") as dst:
            for info in src.infolist():
                data = src.read(info)
                if info.filename == "header.json":
                    data = data.replace(b"{", f'{{"planted": "{canary}", '.encode(), 1)
                dst.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
        assert leaks([tmp_path], canary) == [f"{planted}!header.json"]
        return
    source = root / "report.html" if where == "report" else next((root / "site").rglob("*.html"))
    planted = tmp_path / source.name
    planted.write_bytes(source.read_bytes() + canary.encode())
    assert leaks([tmp_path], canary) == [str(planted)]
