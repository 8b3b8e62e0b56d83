#!/bin/bash
# bench/run's options, without running a bench (timings never go in the
# suite): --help; a bad row and an unknown option refused; --dry-run's
# tree line names the commit of the tree the build directory was
# configured from, not the one bench/run is in, and says "(dirty)" when
# that tree has uncommitted changes.
. "$top_srcdir/tests/integration/lib.sh"

BENCH=$top_srcdir/bench/run

out=$("$BENCH" --help)
ok $? "bench/run --help: exit 0"
like "$out" "--dry-run" "... lists --dry-run"
"$BENCH" --no-such-option >/dev/null 2>&1
is $? 2 "an unknown option: exit 2"
"$BENCH" --builddir "$top_builddir" --rows 0 --dry-run >/dev/null 2>&1
is $? 1 "--rows 0: refused"

out=$("$BENCH" --builddir "$top_builddir" --rows 3,1-2 --dry-run)
ok $? "--dry-run on this build: exit 0"
like "$out" "^rows: 1,2,3" "... the rows it would run, in order"
like "$out" "dbgmirrord: $top_builddir/dbgmirrord" "... and which dbgmirrord"

if ! command -v git >/dev/null; then
	skip "git is not installed"
	done_testing
fi
# Another tree, with a commit of its own, and a build directory configured
# from it: a Makefile naming it, and the programs bench/run looks for.
mkdir -p "$T/other" "$T/b/tests"
git -C "$T/other" init -q &&
    echo one >"$T/other/f" &&
    git -C "$T/other" add f &&
    git -C "$T/other" -c user.name=t -c user.email=t@example.org \
	commit -q -m one
ok $? "another tree, with a commit"
commit=$(git -C "$T/other" rev-parse --short=12 HEAD)
printf 'abs_top_srcdir = %s/b/../other\n' "$T" >"$T/b/Makefile"
for f in dbgmirrord tests/mkelf; do
	printf '#!/bin/sh\nexit 1\n' >"$T/b/$f"
	chmod +x "$T/b/$f"
done
out=$("$BENCH" --builddir "$T/b" --dry-run)
ok $? "--dry-run with a build of that tree: exit 0"
like "$out" "tree: commit $commit of $T/other\$" \
    "... its tree line names that tree's commit, clean: $(echo "$out" | grep tree:)"
echo two >"$T/other/f"
out=$("$BENCH" --builddir "$T/b" --dry-run)
like "$out" "tree: commit $commit \\(dirty\\) of $T/other\$" \
    "... and (dirty) once that tree has a change: $(echo "$out" | grep tree:)"
rm "$T/b/Makefile"
out=$("$BENCH" --builddir "$T/b" --dry-run)
like "$out" "tree: commit unknown" "a build directory without a Makefile: unknown"

done_testing
