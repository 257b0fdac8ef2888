"""`harness doctor` and the choice of a sandbox that cannot run here."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.errors import HarnessUsageError
from harness.sandbox import cgroup, doctor, workfs


def test_doctor_lists_every_sandbox_with_a_verdict_and_a_reason(monkeypatch):
    monkeypatch.setattr(doctor, "docker_available", lambda: "the docker client is not installed")
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()}
    assert set(lines) == {"bwrap", "docker", "local", "/tmp", "/work", "cgroup", "cpu", "seccomp"}
    assert lines["/tmp"].split()[1] == lines["/work"].split()[1] == "works"
    # which /work limit holds here: a filesystem of its own, or the walk after each command
    assert ("loop-mounted image" in lines["/work"]) == (workfs.workfs_support() == "")
    assert "after each command only" in lines["/work"] or not workfs.workfs_support()
    assert ("cpu quota" in lines["cpu"]) == cgroup.cgroup_support().cpu, lines["cpu"]
    assert lines["seccomp"].split()[1] == "works", lines["seccomp"]  # make test installs it
    assert "cgroup" in lines["cgroup"]
    assert lines["bwrap"].split()[1] == "works"  # make test installs it
    assert (
        "docker client is not installed" in lines["docker"] and lines["docker"].split()[1] == "no"
    )
    assert "no isolation" in lines["local"]


def test_docker_without_an_engine_is_one_line_naming_bwrap(monkeypatch, tmp_path):
    fake = tmp_path / "docker"  # a client whose engine is not running
    fake.write_text(
        "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///x' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert "Cannot connect to the Docker daemon" in doctor.docker_available()
    with pytest.raises(HarnessUsageError) as err:
        doctor.require_sandbox("docker")
    message = str(err.value)
    assert "\n" not in message and "bwrap" in message
    doctor.require_sandbox("bwrap")  # works here: no error
    with pytest.raises(HarnessUsageError, match="unknown sandbox"):
        doctor.require_sandbox("vm")


def test_doctor_names_syscalls_the_filter_could_not_refuse(monkeypatch):
    from harness.sandbox.seccomp import SeccompFilter

    monkeypatch.setattr(doctor, "seccomp_filter", lambda: SeccompFilter(b"", ("pidfd_getfd",)))
    [seccomp] = [s for s in doctor.aggregate_limits() if s.name.strip() == "seccomp"]
    assert not seccomp.works and "pidfd_getfd" in seccomp.detail
