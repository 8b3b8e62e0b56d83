#!/usr/bin/env python3
"""tests/symcompare.py: compare the symbolizer's answers with eu-addr2line.

Samples addresses spread over every function's range (the ELF FUNC symbols
of the debug file), asks `eu-addr2line -a -f -i -C` and `symtool lookup`
about each, and compares function, file, line and the inline chain (and,
counted apart, columns).  Every disagreement is asked of llvm-symbolizer
too and classified:

  eu_loses_chain     eu-addr2line 0.188 shows one frame named after the ELF
                     symbol where the DWARF has a function (and often
                     inlined frames): its dwarf_getscopes() finds no scope
                     when the inlined instance's abstract origin is in
                     another unit (LTO; fixed in elfutils 0.189) or when
                     the function sits in a DW_TAG_namespace (Rust), which
                     it prunes as having no address; the symbol may carry
                     LLVM's .llvm.N suffix, which __cxa_demangle refuses;
                     llvm-symbolizer, which names the outermost frame from
                     the symbol table (here and there another symbol than
                     eu-addr2line's) and reads no dwz alt file (names
                     there are "??" to it), has the chain
  symbol_alias       the same frames, and the outermost function named
                     three ways: several ELF symbols share the address
                     (identical functions merged, aliases);
                     eu-addr2line, which cannot reach the DWARF function,
                     and llvm-symbolizer, which names the outermost frame
                     from the symbol table, each show one of them, we the
                     DWARF function's name
  eu_row_start       eu-addr2line 0.188 names the innermost function at the
                     address but takes the inline chain (-i) at the start
                     of the address's line-table row: dwfl_lineinfo()
                     overwrites the address it is given; ours gives its
                     chain at an address between the start of the row (as
                     our table merges rows, that start or later) and the
                     address
  eu_gap_line        eu-addr2line takes the line of an address the unit does
                     not cover from that unit's last row (a line sequence
                     that never ends, or _start's borrowed line)
  rust_escapes       the same Rust legacy name, escapes ($LT$, ..) decoded by
                     us and left by eu-addr2line
  no_row_innermost   no line row covers the address (in the .cold part of a
                     function split by GCC), which an inlined instance does
                     cover: we give that frame with no line;
                     llvm-symbolizer leaves a frame without a row out and
                     agrees on the rest; eu-addr2line shows the symbol
  plain_name         the DWARF names the function by DW_AT_name alone (GCC
                     leaves out the linkage name of, for one, a member of a
                     template instantiated on a type of an anonymous
                     namespace), and we print that; eu-addr2line (no scope
                     found, in an LTO unit) and llvm-symbolizer (outermost
                     frame from the symbol table) print the symbol, whose
                     demangled name ends in ours
  unit_choice        several units claim the address (.debug_aranges) with
                     different DWARF (copies of an inline or template
                     function the linker discarded, pointed at the one it
                     kept): we take the unit llvm's aranges map gives
                     (llvm-dwarfdump --lookup), eu-addr2line whichever its
                     binary search meets; llvm-symbolizer agrees with us
  seq_end_row        the unit's line table has a sequence that ends at the
                     address with a row there (covering no byte) and
                     another that covers it: llvm-symbolizer, which looks
                     rows up per sequence, gives the covering row's line;
                     we, like eu-addr2line in that unit, libdw's pick
                     among the rows at the address, the empty one
                     (libdw's sorted table no longer says which sequence
                     a row is of); checked in the line table itself
                     (llvm-dwarfdump --debug-line)
  llvm_agrees        any other difference where llvm-symbolizer gives our
                     answer (function, line and chain)
  unexplained        none of the above: a bug until shown otherwise

Exits 1 when there is an unexplained disagreement (or a tool failed), 0
otherwise; --json writes the numbers and examples.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys

RUST_ESC = {"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">",
            "LP": "(", "RP": ")", "C": ","}


def rust_segment(seg):
    """One path segment of a Rust legacy name, its escapes decoded."""
    if seg.startswith("_$"):
        seg = seg[1:]
    out, i = [], 0
    while i < len(seg):
        j = seg.find("$", i + 1) if seg[i] == "$" else -1
        code = seg[i + 1:j] if j > 0 else ""
        if code in RUST_ESC:
            out.append(RUST_ESC[code])
        elif re.fullmatch(r"u[0-9a-f]+", code):
            out.append(chr(int(code[1:], 16)))
        elif seg.startswith("..", i):
            out.append("::")
            i += 2
            continue
        else:
            out.append(seg[i])
            i += 1
            continue
        i = j + 1
    return "".join(out)


def rust_decode(name):
    """Rust legacy escapes of a name __cxa_demangle left as they were."""
    if not re.search(r"::h[0-9a-f]{16}$", name) or "$" not in name:
        return name
    return "::".join(rust_segment(seg) for seg in name.split("::"))


ALIASES = {}


def functions(path):
    """(address, size, name) of the sized FUNC symbols, by address; and
    every symbol's names (raw and demangled) by address in ALIASES."""
    seen = {}
    for demangle in ([], ["-C"]):
        out = subprocess.run(["readelf", "-sW"] + demangle + [path],
                             capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            f = line.split(None, 7)
            if len(f) < 8 or not f[6].isdigit():
                continue
            addr, size = int(f[1], 16), int(f[2], 0)
            ALIASES.setdefault(addr, set()).add(f[7])
            if f[3] == "FUNC" and size > 0 and addr not in seen:
                seen[addr] = (addr, size, f[7])
    return [seen[a] for a in sorted(seen)]


def alias_key(name):
    """A symbol name as both spellings of it compare: GCC and LLVM
    suffixes cut, Rust escapes decoded, Rust's hash cut."""
    while CLONE.search(name):
        name = CLONE.sub("", name)
    return re.sub(r"::h[0-9a-f]{16}$", "", rust_decode(name))


def is_alias(name, addr):
    """name is one of the ELF symbols at addr."""
    names = ALIASES.get(addr, set())
    return name is not None and (name in names or alias_key(name) in
                                 {alias_key(n) for n in names})


SYMBOL_KEYS = set()


def is_symbol(name):
    """name is one of the file's ELF symbols."""
    if not SYMBOL_KEYS:
        SYMBOL_KEYS.update(alias_key(n) for ns in ALIASES.values()
                           for n in ns)
    return name is not None and alias_key(name) in SYMBOL_KEYS


def sample(funcs, total, seed):
    """About total addresses (fewer when the functions have fewer bytes):
    each function's first byte and others drawn from its bytes, spread
    evenly over the functions."""
    rnd = random.Random(seed)
    chosen = funcs if len(funcs) <= total else rnd.sample(funcs, total)
    per = -(-total // max(1, len(chosen)))
    addrs = set()
    for addr, size, _ in chosen:
        addrs.add(addr)
        addrs.update(addr + off for off in
                     rnd.sample(range(1, size), min(per, size) - 1))
    return sorted(addrs)


def parse_loc(s):
    """FILE:LINE[:COL] (or ??:0) -> (file, line, col)."""
    m = re.match(r"^(.*):(\d+):(\d+)$", s) or re.match(r"^(.*):(\d+)()$", s)
    if not m or m.group(1) == "??":
        return (None, 0, 0)
    return (m.group(1), int(m.group(2)), int(m.group(3) or 0))


def run_eu(debug, addrs):
    inp = "".join("0x%x\n" % a for a in addrs)
    # It exits 1 when one address had no scope it could read; the answers
    # are all there.
    out = subprocess.run(["eu-addr2line", "-a", "-f", "-i", "-C", "-e",
                          debug], input=inp, capture_output=True,
                         text=True).stdout.splitlines()
    res, i = {}, 0
    while i < len(out):
        addr = int(out[i], 16)
        i += 1
        block = []
        while i < len(out) and not re.match(r"^0x[0-9a-f]+$", out[i]):
            block.append(out[i])
            i += 1
        name = block[0].split(" inlined at ")[0]
        frames = [(None if name == "??" else name,) + parse_loc(block[1])]
        for j in range(2, len(block) - 1, 2):
            frames.append((block[j],) + parse_loc(block[j + 1]))
        res[addr] = {"line1": block[0], "frames": frames}
    return res


def run_ours(symtool, table, addrs):
    inp = "".join("%x\n" % a for a in addrs)
    out = subprocess.run([symtool, "lookup", table], input=inp,
                         capture_output=True, text=True,
                         check=True).stdout.splitlines()
    res, cur = {}, None
    for line in out:
        if line.startswith("@"):
            f = line[1:].split(" ")
            cur = {"status": f[1], "symbol": " ".join(f[2:-3]),
                   "sym_addr": int(f[-3], 16),
                   "line_addr": int(f[-1], 16), "frames": []}
            res[int(f[0], 16)] = cur
        elif line.startswith("F\t"):
            _, fn, fl, ln, col, _ = line.split("\t")
            cur["frames"].append((None if fn == "??" else fn,
                                  None if fl == "??" else fl, int(ln),
                                  int(col)))
    return res


def run_llvm(llvm, debug, addrs):
    if not addrs:
        return {}
    inp = "".join("0x%x\n" % a for a in addrs)
    out = subprocess.run([llvm, "--obj=" + debug, "--inlining", "--demangle",
                          "--output-style=JSON"], input=inp,
                         capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        d = json.loads(line)
        res[int(d["Address"], 16)] = [
            (None if s["FunctionName"] in ("", "??") else s["FunctionName"],
             None if s["FileName"] in ("", "??") else s["FileName"],
             s["Line"], s["Column"])
            for s in d.get("Symbol", [])
            if s["FunctionName"] or s["FileName"]]
    return res


def aranges(debug):
    """The (start, end, unit) ranges of .debug_aranges."""
    out = subprocess.run(["llvm-dwarfdump-14", "--debug-aranges", debug],
                         capture_output=True, text=True).stdout
    res, cu = [], None
    for line in out.splitlines():
        m = re.search(r"cu_offset = (0x[0-9a-f]+)", line)
        if m:
            cu = int(m.group(1), 16)
            continue
        m = re.match(r"^\[(0x[0-9a-f]+), (0x[0-9a-f]+)\)$", line)
        if m and cu is not None:
            res.append((int(m.group(1), 16), int(m.group(2), 16), cu))
    return res


ROW = re.compile(r"^0x([0-9a-f]+)\s+(\d+)\s+\d+\s+\d+\s.*?(end_sequence)?$")


def sequence_rows(debug, addr, ours_line, llvm_line):
    """The line table of the unit llvm-dwarfdump gives for addr has a
    sequence ending at addr with a row of ours_line there, and a sequence
    whose row for addr is llvm_line."""
    out = subprocess.run(["llvm-dwarfdump-14", "--lookup=0x%x" % addr, debug],
                         capture_output=True, text=True).stdout
    m = re.search(r"DW_AT_stmt_list\s+\((0x[0-9a-f]+)\)", out)
    if not m:
        return False
    out = subprocess.run(["llvm-dwarfdump-14", "--debug-line=" + m.group(1),
                          debug], capture_output=True, text=True).stdout
    ending, covering, seq = set(), set(), []
    for line in out.splitlines():
        r = ROW.match(line)
        if not r:
            continue
        a, n = int(r.group(1), 16), int(r.group(2))
        if not r.group(3):
            seq.append((a, n))
            continue
        if a == addr:
            ending |= {n for b, n in seq if b == addr}
        elif seq and seq[0][0] <= addr < a:
            covering |= {[n for b, n in seq if b <= addr][-1]}
        seq = []
    return ours_line in ending and llvm_line in covering


def claimed_by(ranges, addr):
    return {cu for lo, hi, cu in ranges if lo <= addr < hi}


def norm_file(f):
    return os.path.normpath(f) if f else None


def same(a, b, cols=False):
    """Two frame lists agree on function, file, line (and column)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x[0] != y[0] or x[1] != y[1] or x[2] != y[2]:
            return False
        if cols and x[3] != y[3]:
            return False
    return True


CLONE = re.compile(r"(\.(constprop|isra|part|cold|lto_priv)(\.\d+)?)+$"
                   r"| \[clone [^]]*\]$| \(\.llvm\.\d+\)$")


def llvm_name(name, outermost):
    """llvm-symbolizer's name as ours would be: Rust escapes decoded, and
    for the outermost frame, which llvm names from the ELF symbol table,
    GCC's clone suffixes cut."""
    if name is None:
        return None
    while outermost and CLONE.search(name):
        name = CLONE.sub("", name)
    return rust_decode(name)


# llvm-symbolizer reads no dwz alt file: a name it would find there is
# "??" (--llvm-no-alt).
LLVM_NO_ALT = [False]


def llvm_same(ours, llvm):
    """Ours and llvm-symbolizer's agree, allowing llvm's own spellings:
    normalised paths, a function llvm names by DW_AT_name alone, the
    outermost frame named from the symbol table, and without dwz support
    names it could not read."""
    if len(ours) != len(llvm):
        return False
    for i, (x, y) in enumerate(zip(ours, llvm)):
        if LLVM_NO_ALT[0] and y[0] is None and \
                x[2] == y[2] and norm_file(x[1]) == norm_file(y[1]):
            continue
        yn = llvm_name(y[0], i == len(llvm) - 1)
        if x[2] != y[2] or norm_file(x[1]) != norm_file(y[1]):
            return False
        if x[0] != yn and not (x[0] and yn and (
                x[0].split("(")[0].endswith(yn.split("(")[0]) or
                yn.split("(")[0].endswith(x[0].split("(")[0]))):
            return False
    return True


def chain_same(o, lf, sym_addr):
    """ours o and llvm's lf agree, the outermost name perhaps another
    symbol's (llvm names the outermost frame from the symbol table)."""
    return llvm_same(o, lf) or (
        o and len(lf) == len(o) and llvm_same(o[:-1], lf[:-1]) and
        lf[-1][1:3] == o[-1][1:3] and
        (is_alias(lf[-1][0], sym_addr) or is_symbol(lf[-1][0])))


def classify(eu, ours, llvm_frames, units, in_row, seq_end_row):
    e, o = eu["frames"], ours["frames"]
    lf = llvm_frames or []
    if len(o) > 1 and o[0][1] is None and e and e[0][1] is None and \
            chain_same(o[1:], lf, ours["sym_addr"]):
        return "no_row_innermost"
    if e and o and e[0] == o[0] and \
            any(e[1:] == r["frames"][1:] for r in in_row):
        return "eu_row_start"
    if same([(rust_decode(f[0]) if f[0] else f[0],) + f[1:] for f in e], o):
        return "rust_escapes"
    lagree = llvm_frames is not None and llvm_same(o, llvm_frames)
    # llvm-symbolizer agrees but for naming the outermost frame after
    # another symbol.
    lalias = chain_same(o, lf, ours["sym_addr"])
    if units > 1 and e and o and e[-1][0] == o[-1][0] and lalias:
        return "unit_choice"
    if len(e) == 1 and " inlined at " not in eu["line1"] and o and \
            e[0][1:3] == o[0][1:3] and lalias and \
            (len(o) > 1 or e[0][0] != o[0][0]):
        return "eu_loses_chain"
    if len(e) == len(o) == 1 and e[0][1:3] == o[0][1:3] and o[0][0] and \
            "::" + o[0][0] + "(" in (e[0][0] or "") and \
            len(lf) == 1 and lf[0][1:3] == o[0][1:3] and \
            "::" + o[0][0] + "(" in (lf[0][0] or ""):
        return "plain_name"
    if o and ours["status"] != "no_symbol" and e[-1][0] != o[-1][0] and \
            is_alias(e[-1][0], ours["sym_addr"]) and \
            ((e[:-1] == o[:-1] and e[-1][1:] == o[-1][1:]) or
             (len(e) == 1 and e[0][1:] == o[0][1:])) and \
            lalias:
        return "symbol_alias"
    if [f[0] for f in e] == [f[0] for f in o] and e[1:] == o[1:] and \
            o[0][1] is None and lagree:
        return "eu_gap_line"
    if lagree:
        return "llvm_agrees"
    if o and lf and len(o) == len(lf) and o[0][2] != lf[0][2] and \
            chain_same([(o[0][0],) + tuple(lf[0][1:])] + o[1:], lf,
                       ours["sym_addr"]) and \
            seq_end_row(o[0][2], lf[0][2]):
        return "seq_end_row"
    return "unexplained"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--symtool", required=True)
    ap.add_argument("--table", required=True)
    ap.add_argument("--debug", required=True)
    ap.add_argument("--samples", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--llvm", default="llvm-symbolizer-14")
    ap.add_argument("--json")
    ap.add_argument("--show", type=int, default=5)
    ap.add_argument("--name", default="")
    ap.add_argument("--llvm-no-alt", action="store_true",
                    help="the file has a dwz alt file, which "
                    "llvm-symbolizer cannot read")
    args = ap.parse_args()
    LLVM_NO_ALT[0] = args.llvm_no_alt

    funcs = functions(args.debug)
    addrs = sample(funcs, args.samples, args.seed)
    eu = run_eu(args.debug, addrs)
    ours = run_ours(args.symtool, args.table, addrs)
    agree = cols = 0
    differ = []
    for a in addrs:
        if a not in eu or a not in ours:
            differ.append(a)
            continue
        if same(eu[a]["frames"], ours[a]["frames"]):
            agree += 1
            cols += same(eu[a]["frames"], ours[a]["frames"], cols=True)
        else:
            differ.append(a)
    llvm = run_llvm(args.llvm, args.debug, differ)
    ranges = aranges(args.debug) if differ else []
    # Every address from the start of each differing address's row.
    rows = {a: range(max(ours[a]["line_addr"], a - 256), a)
            for a in differ if a in ours and ours[a]["line_addr"]}
    inner = sorted({b for r in rows.values() for b in r})
    at = run_ours(args.symtool, args.table, inner) if inner else {}
    classes, examples = {}, {}
    for a in differ:
        c = classify(eu[a], ours[a], llvm.get(a),
                     len(claimed_by(ranges, a)),
                     [at[b] for b in rows.get(a, ()) if b in at],
                     lambda ol, ll, a=a: sequence_rows(args.debug, a, ol,
                                                       ll)) \
            if a in eu and a in ours else "unexplained"
        classes[c] = classes.get(c, 0) + 1
        ex = examples.setdefault(c, [])
        if len(ex) < args.show:
            ex.append({"addr": "0x%x" % a,
                       "eu": eu.get(a, {}).get("frames"),
                       "ours": ours.get(a, {}).get("frames"),
                       "llvm": llvm.get(a)})
    summary = {"name": args.name, "functions": len(funcs),
               "addresses": len(addrs), "agree": agree,
               "agree_pct": 100.0 * agree / max(1, len(addrs)),
               "columns_agree": cols, "classes": classes,
               "examples": examples}
    print("%s: %d functions, %d addresses, %d agree (%.3f%%), columns too "
          "for %d; differences: %s" % (
              args.name, len(funcs), len(addrs), agree,
              summary["agree_pct"], cols,
              ", ".join("%s %d" % kv for kv in sorted(classes.items()))
              or "none"))
    for c, ex in sorted(examples.items()):
        for x in ex[:args.show]:
            print("  %s %s\n    eu   %s\n    ours %s\n    llvm %s" % (
                c, x["addr"], x["eu"], x["ours"], x["llvm"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 1 if classes.get("unexplained") else 0


if __name__ == "__main__":
    sys.exit(main())
