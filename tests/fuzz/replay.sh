#!/bin/bash
# tests/fuzz/replay.sh: run the seed corpus and every committed crash input
# through the fuzz targets, as one TAP stream for "make check".
#
# The targets are those of the tests/fuzz/fuzz_T.c in the source tree
# (FUZZ_TARGETS="elf rpmhdr" names some instead).  Each target T,
# tests/fuzz/fuzz_T, gets tests/fuzz/corpus/T and tests/fuzz/regress/T
# (those that exist).  Built normally, the targets
# carry tests/fuzz/replay.c, which prints "ok N - PATH" per input; those
# lines are renumbered into this script's stream.  A target that exits
# non-zero or is killed gives one "not ok" naming it, how many of its
# inputs passed, the input it died on and the end of its error output.
# Built with --enable-fuzzing they are libFuzzer programs: "-runs=0" makes
# them run every input once and exit, and each target gives one line
# (replay.c ignores those flags).  By hand, from the build directory:
#   top_srcdir=SRC bash SRC/tests/fuzz/replay.sh
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/integration/lib.sh"

FUZZ_SRC=$top_srcdir/tests/fuzz
TARGETS=${FUZZ_TARGETS:-$(cd "$FUZZ_SRC" && ls fuzz_*.c |
    sed 's/^fuzz_//; s/\.c$//')}

# How a finished command ended, from its exit status.
how() {
	if [ "$1" -gt 128 ]; then
		echo "killed by signal $(($1 - 128))"
	else
		echo "exit status $1"
	fi
}

for t in $TARGETS; do
	bin=$top_builddir/tests/fuzz/fuzz_$t
	dirs=()
	for d in "$FUZZ_SRC/corpus/$t" "$FUZZ_SRC/regress/$t"; do
		[ -d "$d" ] && dirs+=("$d")
	done
	if [ ! -x "$bin" ]; then
		ok 1 "fuzz_$t: $bin is not built"
		continue
	fi
	if [ "${#dirs[@]}" -eq 0 ]; then
		skip "fuzz_$t: no corpus or regress inputs"
		continue
	fi
	total=$(find "${dirs[@]}" -name '.*' -prune -o -type f -print | wc -l)

	# The outer 2>/dev/null takes bash's own "Aborted" notice.
	{ "$bin" -runs=0 -artifact_prefix="$T/" "${dirs[@]}" \
	    >"$T/$t.out" 2>"$T/$t.err" </dev/null; } 2>/dev/null
	rc=$?

	started=0
	passed=0
	planned=""
	last=""
	while IFS= read -r line; do
		case $line in
		"ok "*)
			passed=$((passed + 1))
			path=${line#ok * - }
			ok 0 "fuzz_$t: ${path#"$FUZZ_SRC"/}"
			;;
		"not ok "*)
			path=${line#not ok * - }
			ok 1 "fuzz_$t: ${path#"$FUZZ_SRC"/}"
			;;
		"# input: "*)
			started=$((started + 1))
			last=${line#"# input: "}
			;;
		1..*)
			planned=${line#1..}
			;;
		esac
	done <"$T/$t.out"

	if [ "$rc" -ne 0 ] && [ "$started" -eq 0 ] &&
	    grep -q '^INFO: Seed:' "$T/$t.err"; then
		ok 1 "fuzz_$t: libFuzzer: $(how "$rc") running $total inputs"
		tail -n 40 "$T/$t.err" | sed 's/^/#   /'
	elif [ "$rc" -ne 0 ]; then
		ok 1 "fuzz_$t: $(how "$rc") after $passed of $total inputs"
		if [ "$started" -gt "$passed" ]; then
			diag "died on input: ${last#"$FUZZ_SRC"/}"
		elif [ -z "$planned" ] && [ "$started" -gt 0 ]; then
			diag "died at exit (a leak report?) after every input ran"
		fi
		tail -n 40 "$T/$t.err" | sed 's/^/#   /'
	elif [ -z "$planned" ]; then
		# A libFuzzer build: no TAP of its own, but it read every file.
		found=$(sed -n 's/^INFO: *\([0-9][0-9]*\) files found in .*/\1/p' \
		    "$T/$t.err" | awk '{ n += $1 } END { print n + 0 }')
		is "$found" "$total" "fuzz_$t: libFuzzer ran $total inputs"
	else
		is "$passed" "$total" "fuzz_$t: every input ran"
	fi
done
done_testing
