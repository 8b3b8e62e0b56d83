#!/usr/bin/python3
# tests/unitfilter.py UNIT PROGRAM [ARGS...]: run PROGRAM under the system
# call filter that UNIT's SystemCallFilter= lines would give it under
# systemd (an allow list of the named calls and groups, as
# "systemd-analyze syscall-filter" expands them; in the order of the lines,
# as systemd merges them, a ~ line takes calls out and another puts them
# back; other calls fail with SystemCallErrorNumber=, EPERM here), without
# systemd: libseccomp through ctypes, then exec.
import ctypes
import errno
import os
import re
import subprocess
import sys

groups = {}


def expand(name):
    """The system calls NAME stands for (a group is expanded)."""
    if not name.startswith("@"):
        return {name}
    if name not in groups:
        out = subprocess.run(["systemd-analyze", "syscall-filter", name],
                             capture_output=True, text=True, check=True)
        calls = set()
        for line in out.stdout.splitlines()[1:]:
            word = line.strip()
            if word and not word.startswith("#"):
                calls |= expand(word)
        groups[name] = calls
    return groups[name]


allow = set()
with open(sys.argv[1]) as unit:
    for line in unit:
        m = re.match(r"SystemCallFilter=(~?)(.*)", line.strip())
        if m:
            names = set()
            for word in m.group(2).split():
                names |= expand(word)
            if m.group(1):
                allow -= names
            else:
                allow |= names

lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
lib.seccomp_init.restype = ctypes.c_void_p
lib.seccomp_init.argtypes = [ctypes.c_uint32]
lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32,
                                 ctypes.c_int, ctypes.c_uint]
lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
lib.seccomp_load.argtypes = [ctypes.c_void_p]
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_ACT_ERRNO = 0x00050000 | errno.EPERM

ctx = lib.seccomp_init(SCMP_ACT_ERRNO)
for name in sorted(allow):
    nr = lib.seccomp_syscall_resolve_name(name.encode())
    if nr >= 0:  # unknown here (another architecture's): nothing to allow
        lib.seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0)
if lib.seccomp_load(ctx) != 0:
    sys.exit("unitfilter: seccomp_load failed")
os.execv(sys.argv[2], sys.argv[2:])
