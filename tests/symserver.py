#!/usr/bin/env python3
"""tests/symserver.py: a running dbgmirrord's /symbolicate against
eu-addr2line -f -i -C, for tests/integration/symbolicate.sh.

The addresses are where eu-addr2line is right: the first byte of each line
row (llvm-dwarfdump's --debug-line) inside the debug file's sized FUNC
symbols, at most --samples of them (eu-addr2line 0.188 takes the inline
chain of an address from the start of its row, tests/symcompare.py says
why).  A file without DWARF (--symbols) is asked at its symbols' first
bytes and compared on the function name alone, as eu-addr2line has no
line to give.

Each address is asked in --mode: va (as it is), file_offset (through the
executable's PT_LOAD headers, which the server must use too), or abs (a
process address in a mapping of that segment); with --return, as the
return address one byte after it; with --get, through GET
/buildid/ID/symbolicate in pieces that fit a request line.  The answer
must be the right length, in order, each frame "ok" (or "no_line" with
--symbols) with the address asked and the lookup address, and function,
file, line and inline chain as eu-addr2line's.  Prints a summary; exits 1
on any difference.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import symcompare  # noqa: E402

# Addresses in one GET: its query stays under the server's 4096 bytes.
GET_CHUNK = 180


def row_starts(debug, funcs):
    """First bytes of the line rows inside the functions, sorted."""
    out = subprocess.run(["llvm-dwarfdump-14", "--debug-line", debug],
                         capture_output=True, text=True, check=True).stdout
    rows = set()
    for line in out.splitlines():
        m = re.match(r"^0x([0-9a-f]{16})\s+\d+\s+\d+\s+\d+", line)
        if m and "end_sequence" not in line:
            rows.add(int(m.group(1), 16))
    inside = []
    for a in sorted(rows):
        for lo, size, _ in funcs:
            if lo <= a < lo + size:
                inside.append(a)
                break
    return inside


def loads(exe):
    """The PT_LOAD segments of exe: (vaddr, memsz, offset, filesz)."""
    out = subprocess.run(["readelf", "-lW", exe], capture_output=True,
                         text=True, check=True).stdout
    segs = []
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            segs.append((int(f[2], 16), int(f[5], 16), int(f[1], 16),
                         int(f[4], 16)))
    return segs


def to_offset(segs, va):
    for vaddr, memsz, off, filesz in segs:
        if vaddr <= va < vaddr + min(memsz, filesz):
            return off + (va - vaddr), off
    raise ValueError("0x%x is in no segment's file bytes" % va)


def post(url, body):
    req = urllib.request.Request(url + "/symbolicate",
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type":
                                          "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def get(url, build_id, addrs, mode, ret):
    q = "addr=" + ",".join("0x%x" % a for a in addrs) + "&mode=" + mode
    if ret:
        q += "&return=1"
    with urllib.request.urlopen("%s/buildid/%s/symbolicate?%s" %
                                (url, build_id, q), timeout=120) as r:
        return json.loads(r.read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--build-id", required=True)
    ap.add_argument("--debug", required=True,
                    help="what eu-addr2line reads (and the rows)")
    ap.add_argument("--exe", help="the executable, for file offsets")
    ap.add_argument("--mode", default="va",
                    choices=["va", "file_offset", "abs"])
    ap.add_argument("--return", dest="ret", action="store_true")
    ap.add_argument("--get", action="store_true")
    ap.add_argument("--symbols", action="store_true",
                    help="the file has no DWARF: compare names only")
    ap.add_argument("--samples", type=int, default=400)
    ap.add_argument("--name", default="")
    args = ap.parse_args()

    funcs = symcompare.functions(args.debug)
    if args.symbols:
        vas = [lo for lo, _, _ in funcs]
    else:
        vas = row_starts(args.debug, funcs)
    if len(vas) > args.samples:
        vas = sorted(random.Random(1).sample(vas, args.samples))
    if not vas:
        print("%s: no address to ask" % args.name)
        return 1
    eu = symcompare.run_eu(args.debug, vas)

    segs = loads(args.exe) if args.exe else []
    asked, mod = [], {"build_id": args.build_id, "addr_mode": args.mode}
    for va in vas:
        a = va
        if args.mode != "va":
            off, seg_off = to_offset(segs, va)
            a = off
            if args.mode == "abs":
                map_off = seg_off & ~0xfff
                start = 0x7f5500000000 + map_off
                mod["start"] = "0x%x" % start
                mod["file_offset"] = "0x%x" % map_off
                a = start + (off - map_off)
        asked.append(a + 1 if args.ret else a)
    if args.mode == "abs" and len({to_offset(segs, v)[1] for v in vas}) > 1:
        print("%s: the addresses span two segments" % args.name)
        return 1

    frames = []
    if args.get:
        for i in range(0, len(asked), GET_CHUNK):
            ans = get(args.url, args.build_id, asked[i:i + GET_CHUNK],
                      args.mode, args.ret)
            frames += ans["frames"]
    else:
        ans = post(args.url, {
            "modules": [mod],
            "frames": [{"module": 0, "addr": "0x%x" % a,
                        "return_address": args.ret} for a in asked],
            "options": {"demangle": True, "timeout_ms": 60000}})
        frames = ans["frames"]
        if ans["modules"][0]["status"] != "ok":
            print("%s: module %s" % (args.name, ans["modules"][0]))
            return 1

    bad = []
    if len(frames) != len(asked):
        print("%s: %d frames for %d addresses" % (args.name, len(frames),
                                                  len(asked)))
        return 1
    want_status = "no_line" if args.symbols else "ok"
    for va, a, f in zip(vas, asked, frames):
        ours = [(x["function"], x["file"], x["line"], x["column"])
                for x in f.get("frames", [])]
        theirs = eu.get(va, {}).get("frames")
        lookup = int(f.get("lookup_addr", "0x0"), 16)
        if f.get("status") != want_status or int(f["addr"], 16) != a:
            bad.append((va, "status/addr", f))
        elif lookup != va:
            bad.append((va, "lookup_addr 0x%x" % lookup, f))
        elif args.symbols and (theirs is None or
                               ours[0][0] != theirs[0][0]):
            bad.append((va, "function", (ours, theirs)))
        elif not args.symbols and not symcompare.same(ours, theirs):
            bad.append((va, "frames", (ours, theirs)))
    print("%s: %d addresses (%s%s%s), %d agree with eu-addr2line" % (
        args.name, len(vas), args.mode, ", return" if args.ret else "",
        ", GET" if args.get else "", len(vas) - len(bad)))
    for va, what, x in bad[:5]:
        print("  0x%x %s: %s" % (va, what, x))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
