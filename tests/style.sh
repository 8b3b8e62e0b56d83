#!/bin/bash
# House style checks: every C file is formatted as .clang-format says
# and has at most 1,500 lines, every man page renders without groff
# warnings, the README stays a guide, and the documents point only into
# the tree: each file they name is there.
. "$top_srcdir/tests/integration/lib.sh"

cd "$top_srcdir" || bail "no source tree"
command -v clang-format >/dev/null || bail "clang-format is not installed"
for f in $(find daemon resolver sources cli cache conf fetchers indexer symbolizer tests -name '*.[ch]' | sort); do
	out=$(clang-format --dry-run --Werror "$f" 2>&1)
	ok $? "clang-format: $f"
	[ -n "$out" ] && printf '%s\n' "$out" | head -n 5 | sed 's/^/# /'
done
# Files stay small enough to read: a .c file over 1,500 lines is split
# along what it does (docs/development.md).
long=$(find daemon resolver sources cli cache conf fetchers indexer symbolizer tests \
    -name '*.c' -exec wc -l {} + | awk '$2 != "total" && $1 > 1500 { print $2 " (" $1 ")" }')
is "$long" "" "no .c file over 1,500 lines"
for f in packaging/man/*.[1-8]; do
	out=$(groff -man -Tutf8 -ww -z "$f" 2>&1)
	is "$out" "" "groff -ww: $f"
done
# The guide stays a guide.
n=$(wc -l <README.md)
[ "$n" -le 300 ]
ok $? "README.md is a guide: $n lines, 300 at most"
grep -q '^## Contents' README.md
ok $? "README.md has a contents list"
# Every path of the tree the documents name (in backquotes) exists.
for doc in README.md NEWS docs/*.md bench/README.md; do
	missing=$(grep -o '`[a-z][a-z_-]*/[A-Za-z0-9_./-]*`' "$doc" | tr -d '`' |
	    sed 's/[.,:;]*$//' | sort -u |
	    grep -E '^(docs|packaging|conf|tests|bench|daemon|cli|cache|conf|fetchers|indexer|resolver|sources)/' |
	    while read -r p; do
		# Programs built from p.c; bench/run's own results and downloads;
		# a pattern whose capitals stand for a name (sources/NAME.c).
		[ -e "$p" ] || [ -e "$p.c" ] || case $p in
		*YYYY* | bench/.debs | *NAME* | *MODULE* | */T/ | */T | *_T.c) ;;
		*) echo "$p" ;;
		esac
	    done | tr '\n' ' ')
	is "$missing" "" "$doc names only files of the tree"
done
grep -n '\.\./shared\|shared/[A-Z]*\.md\|/work/' README.md NEWS docs/*.md
ok $((! $?)) "the documents point at nothing outside the tree"
# Nor does anything else: code, tests, packaging, configuration.
grep -rnI -e '\.\./shared' -e 'shared/[A-Z][A-Z]*\.md' -e 'shared/s3lab' \
    --exclude-dir=.git --exclude-dir='build*' --exclude-dir=autom4te.cache \
    --exclude=style.sh .
ok $((! $?)) "no file of the tree points at ../shared"
done_testing
