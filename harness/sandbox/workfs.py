"""The sample's work folder as a filesystem of its own size, or a quota walked after each command.

Where the host allows it (root with the right to mount, `mkfs.ext4`, and loop devices), each
sample's work folder is a loop-mounted ext4 image of `work_mb` MiB with at most `work_files`
inodes: a sparse file that the kernel refuses to grow past its size, so a command can never
hold more of the host's disk than that, not even while it runs (`fallocate` gets ENOSPC). It is
mounted `nosuid,nodev`, with `discard` so that deleted files give their space back, and its root
belongs to the user the sandbox runs as. Making one takes about 30 ms (`workfs_support` probes
once per process).

Elsewhere the quota is checked after each command by `quota_walk`, which uses `du` (it walks
trees of any depth and path length) and fails closed: a tree it cannot read in full counts as
over the quota. That is weaker: a command can hold more than the quota while it runs.
`harness doctor` says which holds here.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

_MIB = 1024 * 1024
_IMAGE_PREFIX = "harness-work-"  # then the harness's pid: `sweep_stale_images` reads it
_FULL_BYTES = 256 * 1024  # a work filesystem with less free space than this is full
_FULL_INODES = 4  # likewise, with fewer free inodes


def _run(argv: list[str]) -> str:
    """Run a set-up command; "" when it worked, else its last line of error."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as ex:
        return str(ex)
    if done.returncode == 0:
        return ""
    return (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]


@dataclass(frozen=True, slots=True)
class WorkImage:
    """A loop-mounted image holding one sample's work folder."""

    image: Path  # the sparse image file on the host
    mount: Path  # the work folder it is mounted on

    @classmethod
    def create(
        cls, mount: Path, size_mb: int, max_files: int, owner: tuple[int, int] | None
    ) -> WorkImage | str:
        """Make and mount an image of `size_mb` MiB on the empty folder `mount`; or why not."""
        size = size_mb * _MIB
        # inode tables take 256 bytes an inode: keep them to an eighth of the image at most
        inodes = max(64, min(max_files, size // 2048))
        fd, name = tempfile.mkstemp(prefix=f"{_IMAGE_PREFIX}{os.getpid()}-", suffix=".img")
        os.close(fd)
        image = Path(name)
        uid, gid = owner if owner is not None else (os.geteuid(), os.getegid())
        os.truncate(image, size)
        why = _run(["mkfs.ext4", "-q", "-F", "-m", "0", "-N", str(inodes), "-O", "^has_journal",
                    "-E", f"root_owner={uid}:{gid},nodiscard", str(image)])  # fmt: skip
        if not why:
            why = _run(["mount", "-o", "loop,nosuid,nodev,noatime,discard", str(image), str(mount)])
        if why:
            image.unlink(missing_ok=True)
            return why
        (mount / "lost+found").rmdir()
        return cls(image, mount)

    def is_full(self) -> str:
        """Why the filesystem is full ("" when it is not)."""
        usage = os.statvfs(self.mount)
        if usage.f_bavail * usage.f_frsize < _FULL_BYTES:
            return f"its {usage.f_blocks * usage.f_frsize // _MIB} MiB are used up"
        if usage.f_favail < _FULL_INODES:
            return f"its {usage.f_files} files and folders are used up"
        return ""

    def remove(self) -> None:
        """Unmount (lazily, if something still holds it) and delete the image."""
        if _run(["umount", str(self.mount)]):
            _run(["umount", "-l", str(self.mount)])
        self.image.unlink(missing_ok=True)


def _dead(name: str) -> bool:
    """Whether an image file's name carries the pid of a process that is gone."""
    pid = name.removeprefix(_IMAGE_PREFIX).split("-")[0]
    return pid.isdigit() and not Path(f"/proc/{pid}").exists()


_EXT4_MAGIC_AT = 1080  # the superblock's s_magic, 0xEF53 little-endian, as mkfs.ext4 writes it
_MOUNT_PREFIXES = ("harness-bwrap-", "harness-workfs-probe-")  # the folders images mount on


def _made_by_us(image: Path) -> bool:
    """Whether `image` is a work image this harness made.

    That is a regular file (never a link), owned by this user, holding an ext4 superblock; a
    file that only shares the name is left alone.
    """
    try:
        info = image.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return False
        fd = os.open(image, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            magic = os.pread(fd, 2, _EXT4_MAGIC_AT)
        finally:
            os.close(fd)
    except OSError:
        return False
    return magic == b"\x53\xef"


def sweep_stale_images() -> list[Path]:
    """Unmount and delete the work images of harness processes that are gone; return them.

    A crash or a `kill -9` leaves a sample's image mounted. Images of live processes are left
    alone, and so is any file that only shares the name (`_made_by_us`): the harness deletes
    only what it wrote.
    """
    removed = []
    mounts = {}
    for line in Path("/proc/self/mounts").read_text().splitlines():
        source, target = line.split()[:2]
        backing = Path("/sys/block") / Path(source).name / "loop" / "backing_file"
        if source.startswith("/dev/loop") and backing.is_file():
            mounts[backing.read_text().strip()] = target.replace("\\040", " ")
    for image in Path(tempfile.gettempdir()).glob(f"{_IMAGE_PREFIX}*.img"):
        if not _dead(image.name) or not _made_by_us(image):
            continue
        target = mounts.get(str(image))
        if target is not None:
            WorkImage(image, Path(target)).remove()
            if Path(target).name.startswith(_MOUNT_PREFIXES):  # a folder the harness made
                remove_tree(Path(target))
        image.unlink(missing_ok=True)
        removed.append(image)
    return removed


@functools.cache
def workfs_support() -> str:
    """Why work folders cannot be images of their own size here ("" when they can).

    The first call also sweeps the images that dead harness processes left mounted.
    """
    if os.geteuid() != 0:
        return "mounting an image needs root; the quota is checked after each command instead"
    if shutil.which("mkfs.ext4") is None or shutil.which("mount") is None:
        return "mkfs.ext4 or mount is missing (e2fsprogs, mount)"
    try:
        sweep_stale_images()
    except OSError:  # best effort: a folder we may not remove is left alone
        pass
    probe = Path(tempfile.mkdtemp(prefix="harness-workfs-probe-"))
    try:
        made = WorkImage.create(probe, 2, 64, None)
        if isinstance(made, str):
            return f"a loop-mounted image cannot be made here ({made})"
        made.remove()
        return ""
    finally:
        probe.rmdir()


def quota_walk(work: Path, max_bytes: int, max_files: int) -> str:
    """Why the work folder is over its quota ("" when it is not), measured with `du`.

    `du` walks trees of any depth and path length without following links. Where it cannot
    read part of the tree, the folder counts as over the quota: what cannot be measured
    cannot be allowed.
    """
    sizes = []
    for flag in ("--block-size=1", "--inodes"):
        try:
            done = subprocess.run(["du", "-s", "-x", flag, "--", str(work)],
                                  capture_output=True, text=True, timeout=120)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as ex:
            return f"it could not be measured ({ex})"
        if done.returncode != 0 or not done.stdout.split():
            line = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
            return f"part of it could not be measured ({line})"
        sizes.append(int(done.stdout.split()[0]))
    size, files = sizes
    if files - 1 > max_files:  # du counts the folder itself
        return f"more than {max_files} files and folders"
    if size > max_bytes:
        return f"more than {max_bytes // _MIB} MiB"
    return ""


def remove_tree(path: Path) -> None:
    """Delete a folder of any depth without following links, with `rm -rf`.

    Python's recursion limit stops `shutil.rmtree` near 1,000 levels. Folders the sandbox made
    unwritable are made writable first, when the harness is not root.

    Raises:
        OSError: The folder is still there afterwards.

    """
    if not os.path.lexists(path):
        return
    if os.geteuid() != 0:
        _run(["chmod", "-R", "u+rwx", "--", str(path)])
    why = _run(["rm", "-rf", "--one-file-system", "--", str(path)])
    if os.path.lexists(path):
        raise OSError(f"could not remove {path}: {why}")
