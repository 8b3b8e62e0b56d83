#!/bin/bash
# House style checks: every C file is formatted as .clang-format says, and
# every man page renders without groff warnings.
. "$top_srcdir/tests/integration/lib.sh"

cd "$top_srcdir" || bail "no source tree"
command -v clang-format >/dev/null || bail "clang-format is not installed"
for f in $(find daemon resolver sources cli cache conf fetchers indexer tests -name '*.[ch]' | sort); do
	out=$(clang-format --dry-run --Werror "$f" 2>&1)
	ok $? "clang-format: $f"
	[ -n "$out" ] && printf '%s\n' "$out" | head -n 5 | sed 's/^/# /'
done
for f in packaging/man/*.[1-8]; do
	out=$(groff -man -Tutf8 -ww -z "$f" 2>&1)
	is "$out" "" "groff -ww: $f"
done
done_testing
