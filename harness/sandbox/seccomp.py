"""The seccomp filter every bwrap sandbox runs under: the kernel calls a test never needs.

The filter is built by libseccomp's own Python binding (Debian's `python3-seccomp`, run by
the system's `/usr/bin/python3`, since the binding is compiled for it and is not on PyPI),
exported as a BPF program once per process, and handed to bwrap with `--seccomp FD`. bwrap
installs it last, just before it starts the command, so its own set-up is unaffected.

What it refuses (with EPERM, so a program sees an ordinary "Operation not permitted"):

- other processes' memory, descriptors and tracing: `ptrace`, `process_vm_readv`/`writev`,
  `kcmp`, `pidfd_getfd` (which could take bwrap's own descriptors and fake its exit code);
- sockets of the AF_VSOCK family, which no network namespace confines (they reach the
  hypervisor of a virtual machine);
- namespaces and mounts: `unshare`, `setns`, `mount`, `umount2`, `pivot_root`, `chroot`,
  the new mount API (`fsopen`, `fsmount`, `move_mount`, `open_tree`, ...), and `clone` with
  a namespace flag; `clone3` gets ENOSYS, because its flags sit behind a pointer the filter
  cannot read, and C libraries then fall back to `clone`;
- kernel keyrings, BPF, perf events, io_uring, userfaultfd, module loading, kexec, swap,
  reboot, clocks, quotas, accounting, handle-based opens and the kernel log.

Anything else is allowed. A name in the list that this libseccomp does not know cannot be
filtered: `seccomp_filter` reports such names, the sandbox logs a warning once, and
`harness doctor` lists them. A process of another architecture (a 32-bit binary on x86-64) is
killed by libseccomp's architecture check. The list is ours, in the spirit of Docker's and
Flatpak's default profiles.
"""

from __future__ import annotations

import functools
import logging
import os
import subprocess
from dataclasses import dataclass

logger = logging.getLogger(__name__)

SYSTEM_PYTHON = "/usr/bin/python3"
"""The interpreter that Debian's libseccomp binding is built for."""

DENIED_SYSCALLS = (
    # tracing and other processes' memory
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # namespaces and mounts
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig",
    "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    # kernel facilities a test has no use for
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "init_module", "finit_module",
    "delete_module", "kexec_load", "kexec_file_load", "swapon", "swapoff", "reboot",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "acct", "quotactl",
    "open_by_handle_at", "name_to_handle_at", "syslog", "lookup_dcookie", "uselib", "vhangup",
    "iopl", "ioperm",
)  # fmt: skip

# Run by SYSTEM_PYTHON: argv[1:] are the syscalls to deny; the BPF program goes to stdout and
# the names this kernel's libseccomp does not know go to stderr, one a line.
_BUILD = """
import errno, sys
import seccomp

f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
for name in sys.argv[1:]:
    try:
        f.add_rule(seccomp.ERRNO(errno.EPERM), name)
    except (RuntimeError, ValueError, OSError):
        print(name, file=sys.stderr)
# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET: any one refuses the clone
for flag in (0x20000, 0x2000000, 0x4000000, 0x8000000, 0x10000000, 0x20000000, 0x40000000):
    f.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
f.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
# AF_VSOCK (40): not confined by a network namespace
f.add_rule(seccomp.ERRNO(errno.EPERM), "socket", seccomp.Arg(0, seccomp.EQ, 40))
sys.stdout.flush()
f.export_bpf(sys.stdout)
"""


@dataclass(frozen=True, slots=True)
class SeccompFilter:
    """A built filter: the BPF program, and the names it could not filter."""

    program: bytes  # the BPF program for `bwrap --seccomp`
    unknown: tuple[str, ...]  # names in the deny list that this libseccomp does not know


def build_filter(names: tuple[str, ...]) -> SeccompFilter | str:
    """Build a filter that refuses `names` (and the fixed rules), or a one-line reason why not.

    One run of the system Python, about 30 ms.
    """
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"{SYSTEM_PYTHON} is missing, and libseccomp's binding runs on it"
    try:
        done = subprocess.run(
            [SYSTEM_PYTHON, "-I", "-c", _BUILD, *names], capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as ex:
        return f"libseccomp's binding could not be run: {ex}"
    lines = done.stderr.decode(errors="replace").strip().splitlines()
    if done.returncode != 0:
        last = (lines or ["no message"])[-1]
        if "No module named 'seccomp'" in last:
            return (
                "libseccomp's Python binding is not installed; run "
                "scripts/install-debian-packages.sh seccomp=python3-seccomp"
            )
        return f"the seccomp filter could not be built: {last}"
    if not done.stdout or len(done.stdout) % 8:
        return "libseccomp exported no BPF program (or one of a wrong length)"
    return SeccompFilter(done.stdout, tuple(line for line in lines if line in names))


@functools.cache
def seccomp_filter() -> SeccompFilter | str:
    """The sandbox's filter (`DENIED_SYSCALLS` and the fixed rules), built once per process."""
    return build_filter(DENIED_SYSCALLS)


def warn_unknown(built: SeccompFilter) -> None:
    """Log a warning that names the calls the filter could not refuse, if there are any."""
    if built.unknown:
        logger.warning(
            "seccomp: libseccomp does not know %s; the sandbox cannot refuse %s",
            ", ".join(built.unknown),
            "it" if len(built.unknown) == 1 else "them",
        )


@functools.cache
def seccomp_program() -> bytes | str:
    """The filter as a BPF program for `bwrap --seccomp`, or a one-line reason it cannot be built.

    The first call warns about any name libseccomp does not know (`warn_unknown`).
    """
    built = seccomp_filter()
    if isinstance(built, str):
        return built
    warn_unknown(built)
    return built.program


def seccomp_fd(program: bytes) -> int:
    """A fresh anonymous file holding `program`, at offset 0, for bwrap to read and close.

    Each command gets its own, since bwrap reads the descriptor to its end.
    """
    fd = os.memfd_create("harness-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd
