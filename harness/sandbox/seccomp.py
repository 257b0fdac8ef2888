"""The seccomp filter every bwrap sandbox runs under: the kernel calls a test never needs.

The filter is built by libseccomp's own Python binding (Debian's `python3-seccomp`, run by
the system's `/usr/bin/python3`, since the binding is compiled for it and is not on PyPI),
exported as a BPF program once per process, and handed to bwrap with `--seccomp FD`. bwrap
installs it last, just before it starts the command, so its own set-up is unaffected.

What it refuses (with EPERM, so a program sees an ordinary "Operation not permitted"):

- other processes' memory and tracing: `ptrace`, `process_vm_readv`/`writev`, `kcmp`;
- namespaces and mounts: `unshare`, `setns`, `mount`, `umount2`, `pivot_root`, `chroot`,
  the new mount API (`fsopen`, `fsmount`, `move_mount`, `open_tree`, ...), and `clone` with
  a namespace flag; `clone3` gets ENOSYS, because its flags sit behind a pointer the filter
  cannot read, and C libraries then fall back to `clone`;
- kernel keyrings, BPF, perf events, io_uring, userfaultfd, module loading, kexec, swap,
  reboot, clocks, quotas, accounting, handle-based opens and the kernel log.

Anything else is allowed. A process of another architecture (a 32-bit binary on x86-64) is
killed by libseccomp's architecture check. The list is ours, in the spirit of Docker's and
Flatpak's default profiles.
"""

from __future__ import annotations

import functools
import os
import subprocess

SYSTEM_PYTHON = "/usr/bin/python3"
"""The interpreter that Debian's libseccomp binding is built for."""

DENIED_SYSCALLS = (
    # tracing and other processes' memory
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
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
sys.stdout.flush()
f.export_bpf(sys.stdout)
"""


@functools.cache
def seccomp_program() -> bytes | str:
    """The filter as a BPF program for `bwrap --seccomp`, or a one-line reason it cannot be built.

    Built once per process (about 30 ms: one run of the system Python).
    """
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return f"{SYSTEM_PYTHON} is missing, and libseccomp's binding runs on it"
    try:
        done = subprocess.run(
            [SYSTEM_PYTHON, "-I", "-c", _BUILD, *DENIED_SYSCALLS],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as ex:
        return f"libseccomp's binding could not be run: {ex}"
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines() or ["no message"]
        if "No module named 'seccomp'" in lines[-1]:
            return (
                "libseccomp's Python binding is not installed; run "
                "scripts/install-debian-packages.sh seccomp=python3-seccomp"
            )
        return f"the seccomp filter could not be built: {lines[-1]}"
    if not done.stdout or len(done.stdout) % 8:
        return "libseccomp exported no BPF program (or one of a wrong length)"
    return done.stdout


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
