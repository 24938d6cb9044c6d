"""The syscall filter of bubblewrap sandboxes: what Docker's default profile
denies that code without capabilities could still use.

bwrap makes no user namespace, so uid 1000 in one sandbox is uid 1000 in every
other and on the host. Without a filter, kernel keyrings (add_key, keyctl,
request_key) are shared between sandboxes: one solution stores a key in the
user keyring and the next reads it. That is a memory across rollouts that the
fresh-sandbox promise rules out (found by a red-team review). The rest of the
list are the kernel's exploit surfaces Docker's profile also closes to
unprivileged code: userfaultfd, perf_event_open, bpf, io_uring, new namespaces
(unshare, setns, clone with CLONE_NEW*), and the mount and module calls (which
need capabilities the sandbox never has, denied anyway).

The program is compiled by libseccomp (through pyseccomp, a ctypes binding):
the native architecture only, other ABIs (i386, x32) killed, so a 32-bit
syscall number cannot reach a call the list denies. bwrap loads it (--seccomp
FD) just before it execs the sandbox's command, whose every descendant it binds.
"""
from __future__ import annotations

import errno
import functools
import logging
import os
import tempfile

from taskforge.errors import InfraError

logger = logging.getLogger(__name__)

DENIED = (
    "add_key", "request_key", "keyctl",                       # keyrings shared by uid
    "userfaultfd", "perf_event_open", "bpf",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "unshare", "setns",
    "mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick",
    "open_by_handle_at", "name_to_handle_at",
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "acct", "swapon", "swapoff", "reboot", "syslog", "quotactl", "lookup_dcookie",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "uselib", "vhangup",
)
# clone with any of these flags makes a namespace (CLONE_NEWNS, NEWCGROUP, NEWUTS,
# NEWIPC, NEWUSER, NEWPID, NEWNET); clone3 passes its flags in memory a filter
# cannot read, so it says ENOSYS and the C library falls back to clone.
CLONE_NEW_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                   0x40000000)


@functools.lru_cache(maxsize=1)
def program() -> bytes:
    """The compiled filter (classic BPF, as bwrap --seccomp reads it)."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as exc:     # OSError: no libseccomp.so.2 on this host
        raise InfraError(f"the bubblewrap backend needs libseccomp and pyseccomp: {exc}") from None
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    deny = sc.ERRNO(errno.EPERM)
    skipped = []
    for name in DENIED:
        try:
            f.add_rule(deny, name)
        except (ValueError, RuntimeError, OSError):
            skipped.append(name)            # not a syscall of this architecture or libseccomp
    for flag in CLONE_NEW_FLAGS:
        f.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    try:
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    except (ValueError, RuntimeError, OSError):
        skipped.append("clone3")
    if skipped:
        logger.info("seccomp: not on this architecture: %s", ", ".join(skipped))
    with tempfile.TemporaryFile() as fh:
        f.export_bpf(fh)          # libseccomp writes to the descriptor itself
        fh.seek(0)
        data = fh.read()
    if not data or len(data) % 8:
        raise InfraError("libseccomp exported no usable filter")
    return data


def filter_fd() -> int:
    """A fresh descriptor holding the program, for one bwrap to read (the
    caller passes it and closes it once bwrap has started)."""
    data = program()
    fd = os.memfd_create("tf-seccomp")
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
