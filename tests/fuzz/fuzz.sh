#!/bin/bash
# tests/fuzz/fuzz.sh: "make fuzz" -- run every fuzz target with libFuzzer
# for FUZZ_SECONDS (600) each, under ASan and UBSan.
#
# It configures its own build with clang in BUILDDIR/fuzz-build (the
# ordinary build links the targets with replay.c instead), copies each
# target's seed corpus to a scratch directory so the committed one stays
# small, and runs the target there.  A crash is minimised into
# tests/fuzz/regress/TARGET/, where "make check" replays it from then on;
# the script then fails, naming it.  The targets are the
# tests/fuzz/fuzz_T.c of the source tree; FUZZ_ONLY="elf rpmhdr" limits
# them.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
seconds=${FUZZ_SECONDS:-600}
targets=${FUZZ_ONLY:-$(cd "$top_srcdir/tests/fuzz" && ls fuzz_*.c |
    sed 's/^fuzz_//; s/\.c$//')}
fb=$top_builddir/fuzz-build
failed=0

command -v clang >/dev/null ||
    { echo "fuzz.sh: clang is needed (apt-get install clang)" >&2; exit 1; }
# Debian ships libFuzzer's runtime apart from clang.
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
    clang -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null ||
    { echo "fuzz.sh: clang cannot link libFuzzer" \
	"(apt-get install libclang-rt-14-dev)" >&2; exit 1; }
mkdir -p "$fb"
if [ ! -f "$fb/Makefile" ]; then
	(cd "$fb" && "$top_srcdir/configure" -q CC=clang --enable-fuzzing \
	    --enable-sanitizers) || { echo "fuzz.sh: configure failed" >&2; exit 1; }
fi
for t in $targets; do
	make -s -C "$fb" "tests/fuzz/fuzz_$t" >/dev/null ||
	    { echo "fuzz.sh: fuzz_$t does not build" >&2; exit 1; }
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/dbgmirror-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
for t in $targets; do
	mkdir -p "$scratch/$t" "$scratch/$t-crash"
	cp "$top_srcdir/tests/fuzz/corpus/$t/"* "$scratch/$t/" 2>/dev/null
	echo "fuzz.sh: fuzz_$t for ${seconds}s"
	"$fb/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 \
	    -max_len=16384 -artifact_prefix="$scratch/$t-crash/" \
	    "$scratch/$t" >"$scratch/$t.log" 2>&1
	runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$scratch/$t.log")
	crashes=$(find "$scratch/$t-crash" -type f | head -n 20)
	if [ -z "$crashes" ]; then
		echo "fuzz.sh: fuzz_$t: ${runs:-?} runs, no crash"
		continue
	fi
	failed=$((failed + 1))
	mkdir -p "$top_srcdir/tests/fuzz/regress/$t"
	for c in $crashes; do
		min=$top_srcdir/tests/fuzz/regress/$t/$(basename "$c")
		"$fb/tests/fuzz/fuzz_$t" -minimize_crash=1 -max_total_time=60 \
		    -exact_artifact_path="$min" "$c" >/dev/null 2>&1 ||
		    cp "$c" "$min"
		echo "fuzz.sh: fuzz_$t crashed: kept $min"
	done
	tail -n 30 "$scratch/$t.log"
done
[ "$failed" -eq 0 ]
