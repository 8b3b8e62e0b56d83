#!/bin/bash
# tests/integration/symbolize.sh: the symbolizer's answers against
# eu-addr2line -f -i -C's, on programs compiled here: C (-O2 across two
# units, and the same with -flto), C++ (-O2: templates, namespaces,
# virtual methods, lambdas, libstdc++ inlined), Rust (-O), and the C and
# C++ ones again through a dwz -m alt file.  Each is split into an
# executable and a compressed debug file, as distributions ship them, and
# its table built from both.  tests/symcompare.py samples addresses over
# every function and classifies each disagreement (eu-addr2line 0.188's
# known bugs, confirmed by llvm-symbolizer-14 and the DWARF); a program
# with any unexplained disagreement fails.  A missing tool is a failure.
. "$top_srcdir/tests/integration/lib.sh"

SYMTOOL=$top_builddir/tests/symtool
FX=$top_srcdir/tests/fixtures/sym
SAMPLES=${SYMBOLIZE_SAMPLES:-2000}
# Debian's rustc, also where a rustup one comes first in PATH.
RUSTC=${RUSTC:-$([ -x /usr/bin/rustc ] && echo /usr/bin/rustc || echo rustc)}

for tool in gcc g++ "$RUSTC" dwz objcopy eu-addr2line llvm-symbolizer-14 \
    llvm-dwarfdump-14 python3; do
	command -v "$tool" >/dev/null || bail "$tool is not installed"
done
[ -x "$SYMTOOL" ] || bail "$SYMTOOL is not built"

cd "$T" || bail "no test directory"
# run LOG COMMAND...: run it with its output in $T/LOG.log; its status.
run() {
	local log=$1
	shift
	"$@" >"$T/$log.log" 2>&1
	echo $?
}

ok "$(run cc gcc -O2 -g -o c_prog "$FX/c_main.c" "$FX/c_lib.c")" \
    "C program built"
ok "$(run lto gcc -O2 -g -flto -o c_lto "$FX/c_main.c" "$FX/c_lib.c")" \
    "C program built with -flto"
ok "$(run cxx g++ -O2 -g -o cxx_prog "$FX/cxx_main.cc" "$FX/cxx_lib.cc")" \
    "C++ program built"
ok "$(run rust "$RUSTC" -O -g -o rust_prog "$FX/rust_main.rs")" \
    "Rust program built"

# split NAME: NAME.debug (compressed DWARF) and NAME.exe (stripped).
split() {
	objcopy --only-keep-debug --compress-debug-sections=zlib "$1" "$1.debug" &&
	    objcopy --strip-all "$1" "$1.exe"
}

# compare NAME DEBUG ALT: build the table, then compare.
compare() {
	local name=$1 debug=$2 alt=$3 out
	if ! "$SYMTOOL" build "$name.tbl" "$debug" "$alt" "$name.exe" "$T" \
	    >"$name.build" 2>&1; then
		ok 1 "$name: table built"
		sed 's/^/#   /' "$name.build"
		return
	fi
	out=$(python3 "$top_srcdir/tests/symcompare.py" --symtool "$SYMTOOL" \
	    --table "$name.tbl" --debug "$debug" --samples "$SAMPLES" \
	    --name "$name" --show 3 2>&1)
	ok $? "$name: every difference from eu-addr2line explained" ||
	    printf '%s\n' "$out" | cut -c1-300 | sed 's/^/#   /'
	diag "$(printf '%s\n' "$out" | head -n 1)"
}

for p in c_prog c_lto cxx_prog rust_prog; do
	ok "$(run "split-$p" split "$p")" "$p split"
	compare "$p" "$p.debug" -
done

# The C and C++ programs through one dwz alt file, as Debian's -dbg
# packages are made (dh_dwz: dwz -m with an absolute -M path; here a
# relative one, which eu-addr2line finds beside the debug files).
# dwz reads uncompressed sections; the results are compressed after it,
# as dh_strip does.
# A second C++ build (-O1) shares most of its types with the first, and
# the two C ones theirs, so that dwz has something to move.
dwz_split() {
	mkdir -p dwz && cp c_prog.exe c_dwz.exe && cp cxx_prog.exe cxx_dwz.exe &&
	    g++ -O1 -g -o cxx_o1 "$FX/cxx_main.cc" "$FX/cxx_lib.cc" &&
	    objcopy --only-keep-debug c_prog dwz/c_dwz.debug &&
	    objcopy --only-keep-debug c_lto dwz/c_lto.debug &&
	    objcopy --only-keep-debug cxx_prog dwz/cxx_dwz.debug &&
	    objcopy --only-keep-debug cxx_o1 dwz/cxx_o1.debug &&
	    (cd dwz && dwz -m alt.debug -M alt.debug c_dwz.debug c_lto.debug \
		cxx_dwz.debug cxx_o1.debug) &&
	    for f in c_dwz.debug cxx_dwz.debug alt.debug; do
		objcopy --compress-debug-sections=zlib "dwz/$f" || return 1
	    done
}
ok "$(run dwz dwz_split)" "dwz -m on the C and C++ debug files"
for p in c_dwz cxx_dwz; do
	readelf -S "dwz/$p.debug" | grep -q gnu_debugaltlink
	ok $? "$p.debug links to the alt file"
	compare "$p" "dwz/$p.debug" dwz/alt.debug
done
done_testing
