"""Where benchmarked daemons keep their state.

A daemon's state dir holds one log file per job, so creating files is on every start's path.
This host's root file system is an ext4 *without* a journal, and there the kernel never hands
out an inode freed in the last minute or more (`recently_deleted` in fs/ext4/ialloc.c): after
a test suite has removed thousands of files, each creation scans past them, 0.4-0.8 ms instead
of ~20 us.  A Debian server's ext4 has a journal and no such scan.  So, when run as root, the
benchmarks make a small journaled ext4 (a sparse image on a loop device, mkfs defaults) and
keep their state dirs there; otherwise, or with --state-root, the given directory is used as
it is.  The report says which, with the measured cost of one file creation.
"""
import contextlib
import os
import shutil
import subprocess
import tempfile

DEFAULT_ROOT = "/var/tmp"
IMAGE_BYTES = 2 << 30


def _have(*tools):
    return all(shutil.which(t) for t in tools)


@contextlib.contextmanager
def journaled_ext4(parent=DEFAULT_ROOT):
    """Yields the mount point of a fresh journaled ext4, or None when one cannot be made."""
    if os.geteuid() != 0 or not _have("mkfs.ext4", "mount", "umount"):
        yield None
        return
    work = tempfile.mkdtemp(prefix="gw-bench-fs-", dir=parent)
    os.chmod(work, 0o755)  # the peers' daemons (munge, slurm) run as their own users
    image, mnt = os.path.join(work, "fs.img"), os.path.join(work, "mnt")
    mounted = False
    try:
        os.mkdir(mnt)
        with open(image, "wb") as f:
            f.truncate(IMAGE_BYTES)
        made = subprocess.run(["mkfs.ext4", "-q", "-F", image], stdout=subprocess.DEVNULL).returncode == 0
        mounted = made and subprocess.run(["mount", "-o", "loop", image, mnt],
                                          stderr=subprocess.DEVNULL).returncode == 0
        # One yield only: an exception of the caller's body comes back through it and must
        # not be taken for a failed set-up (the file system would then stay mounted).
        yield mnt if mounted else None
    finally:
        # Lazily when busy (a process the caller left behind): never a mount left in place.
        if mounted and subprocess.run(["umount", mnt], check=False).returncode != 0:
            subprocess.run(["umount", "-l", mnt], check=False)
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def state_root(explicit):
    """(directory, words for the report): the explicit one, else a journaled ext4, else /var/tmp."""
    if explicit:
        yield explicit, f"state dirs under {explicit}"
        return
    with journaled_ext4() as mnt:
        if mnt:
            yield mnt, "state dirs on a fresh journaled ext4 (loop device, mkfs.ext4 defaults; see bench/statefs.py)"
        else:
            yield DEFAULT_ROOT, f"state dirs under {DEFAULT_ROOT} (not root: no journaled ext4 made)"
