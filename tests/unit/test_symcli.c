/*
 * tests/unit/test_symcli.c: what dbgmirror symbolicate reads and prints,
 * on fixed inputs: /symbolicate's answers read back (every status, the
 * daemon's objects kept, bad answers refused), the lines eu-addr2line
 * -f -i -C prints for them (the texts of elfutils 0.188 for the same
 * frames), and perf script's text (callchain entries, samples without a
 * callchain, -F +dsoff, mmap events, perf buildid-list) read and written
 * back symbolized.
 */
#include "cli/perfscript.h"
#include "cli/symout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"

#define FILE_C "/src/inl4.c"

/* An answer of every status, as the daemon writes one. */
static const char answer[] =
    "{\"modules\":[{\"build_id\":\"0102\",\"status\":\"ok\","
    "\"source\":\"debuginfo\",\"alt\":null},"
    "{\"build_id\":\"0304\",\"status\":\"missing\"}],"
    "\"frames\":["
    /* 0: three inlined frames in work */
    "{\"status\":\"ok\",\"addr\":\"0x1174\",\"lookup_addr\":\"0x1174\","
    "\"symbol\":\"work\",\"sym_addr\":\"0x1170\",\"sym_offset\":4,"
    "\"frames\":["
    "{\"function\":\"l1\",\"file\":\"" FILE_C "\",\"line\":2,\"column\":40,"
    "\"inlined\":true},"
    "{\"function\":\"l2\",\"file\":\"" FILE_C "\",\"line\":3,\"column\":38,"
    "\"inlined\":true},"
    "{\"function\":\"l3\",\"file\":\"" FILE_C "\",\"line\":4,\"column\":53,"
    "\"inlined\":true},"
    "{\"function\":\"work\",\"file\":\"" FILE_C "\",\"line\":5,"
    "\"column\":106,\"inlined\":false}]},"
    /* 1: one frame, no column */
    "{\"status\":\"ok\",\"addr\":\"0x1180\",\"lookup_addr\":\"0x1180\","
    "\"frames\":[{\"function\":\"work\",\"file\":\"" FILE_C "\","
    "\"line\":5,\"column\":0,\"inlined\":false}],\"future\":[1,{}]},"
    /* 2: a symbol without a line */
    "{\"status\":\"no_line\",\"addr\":\"0x2000\",\"lookup_addr\":\"0x2000\","
    "\"symbol\":\"_Z3foov\",\"sym_addr\":\"0x1ff0\",\"sym_offset\":16,"
    "\"frames\":[{\"function\":\"foo()\",\"file\":null,\"line\":0,"
    "\"column\":0,\"inlined\":false}]},"
    /* 3: nothing there */
    "{\"status\":\"no_symbol\",\"addr\":\"0x10\",\"lookup_addr\":\"0x10\","
    "\"frames\":[]},"
    /* 4: the module is missing */
    "{\"status\":\"missing\",\"addr\":\"0x99\"},"
    /* 5: a bad address */
    "{\"status\":\"bad_address\",\"addr\":\"0x5\",\"reason\":\"an offset in "
    "no segment\"},"
    /* 6: an inlined frame called from a place with no line, in a file */
    "{\"status\":\"ok\",\"addr\":\"0x1\",\"frames\":["
    "{\"function\":\"in\",\"file\":\"/a.c\",\"line\":7,\"column\":0,"
    "\"inlined\":true},"
    "{\"function\":null,\"file\":\"/b.c\",\"line\":0,\"column\":0,"
    "\"inlined\":false}]},"
    /* 7: an inlined frame whose call site is unknown */
    "{\"status\":\"ok\",\"addr\":\"0x2\",\"frames\":["
    "{\"function\":\"in\",\"file\":\"/a.c\",\"line\":7,\"column\":3,"
    "\"inlined\":true},"
    "{\"function\":\"out\",\"file\":null,\"line\":0,\"column\":0,"
    "\"inlined\":false}]}"
    "]}";

/* What eu-addr2line -f -i -C prints for each frame of answer. */
static const char *const addr2line[] = {
	"l1 inlined at " FILE_C ":3:38 in work\n" FILE_C ":2:40\n"
	"l2\n" FILE_C ":3:38\nl3\n" FILE_C ":4:53\nwork\n" FILE_C ":5:106\n",
	"work\n" FILE_C ":5\n",
	"foo()\n??:0\n",
	"??\n??:0\n",
	"??\n??:0\n",
	"??\n??:0\n",
	"in inlined from /b.c in ??\n/a.c:7\n??\n/b.c:0\n",
	"in inlined in out\n/a.c:7:3\nout\n??:0\n",
};

/* What symout_addr2line() prints for a, into a static buffer. */
static const char *
printed(const struct symout_addr *a, int demangle)
{
	static char *buf;
	size_t len;
	FILE *fp;

	free(buf);
	buf = NULL;
	if ((fp = open_memstream(&buf, &len)) == NULL)
		return "";
	symout_addr2line(fp, a, demangle);
	fclose(fp);
	return buf;
}

/* s up to its first newline, in place. */
static const char *
first_line(const char *s)
{
	char *nl = strchr(s, '\n');

	if (nl != NULL)
		*nl = '\0';
	return s;
}

static void
test_answer(void)
{
	struct symout_answer ans;
	char why[256], name[64];
	size_t i;

	is_int(symout_parse(answer, strlen(answer), &ans, why, sizeof(why)), 0,
	    "a whole answer is read");
	is_int(ans.nmodules, 2, "two modules");
	is_int(ans.naddrs, 8, "eight frames");
	if (ans.naddrs != 8 || ans.nmodules != 2)
		return;
	is_int(ans.modules[0].status, SYMOUT_OK, "module 0 ok");
	is_int(ans.modules[1].status, SYMOUT_MISSING, "module 1 missing");
	is_str(ans.modules[1].json,
	    "{\"build_id\":\"0304\",\"status\":\"missing\"}",
	    "a module's object kept as the daemon wrote it");
	is_int(ans.addrs[0].nframes, 4, "four frames of an inlined address");
	is_str(ans.addrs[0].frames[3].function, "work", "the outermost");
	ok(ans.addrs[0].frames[1].inlined && !ans.addrs[0].frames[3].inlined,
	    "inlined flags read");
	is_int(ans.addrs[0].frames[3].column, 106, "columns read");
	is_str(ans.addrs[0].symbol, "work", "the symbol read");
	ok(strncmp(ans.addrs[1].json, "{\"status\":\"ok\",\"addr\":\"0x1180\"",
	       30) == 0 &&
		ans.addrs[1].json[strlen(ans.addrs[1].json) - 1] == '}' &&
		strstr(ans.addrs[1].json, "\"future\":[1,{}]") != NULL,
	    "a frame's object kept whole, members not known included");
	is_int(ans.addrs[2].status, SYMOUT_NO_LINE, "no_line");
	is_str(ans.addrs[2].frames[0].file, NULL, "a null file is NULL");
	is_int(ans.addrs[3].status, SYMOUT_NO_SYMBOL, "no_symbol");
	is_int(ans.addrs[4].status, SYMOUT_MISSING, "missing");
	is_int(ans.addrs[5].status, SYMOUT_BAD_ADDRESS, "bad_address");
	is_str(ans.addrs[5].reason, "an offset in no segment", "its reason");
	is_int(ans.addrs[6].frames[1].function == NULL, 1,
	    "a null function is NULL");
	for (i = 0; i < 8; i++) {
		snprintf(name, sizeof(name),
		    "frame %zu printed as eu-addr2line -f -i -C", i);
		is_str(printed(&ans.addrs[i], 1), addr2line[i], name);
	}
	ok(symout_answered(&ans.addrs[3]) && symout_answered(&ans.addrs[5]) &&
		!symout_answered(&ans.addrs[4]),
	    "no_symbol and bad_address are answers, missing is not");
	/* eu-addr2line names what holds an inlined chain after its symbol. */
	free(ans.addrs[0].symbol);
	ans.addrs[0].symbol = strdup("_Z4workv.constprop.0");
	is_str(first_line(printed(&ans.addrs[0], 1)),
	    "l1 inlined at " FILE_C ":3:38 in work() [clone .constprop.0]",
	    "the symbol of an inlined chain, demangled");
	is_str(first_line(printed(&ans.addrs[0], 0)),
	    "l1 inlined at " FILE_C ":3:38 in _Z4workv.constprop.0",
	    "and raw without demangling");
	ans.addrs[0].status = SYMOUT_PENDING;
	is_str(printed(&ans.addrs[0], 1), "??\n??:0\n",
	    "a pending frame prints as unknown, whatever it holds");
	symout_answer_free(&ans);
}

static void
test_bad_answers(void)
{
	static const struct {
		const char *body, *why;
	} bad[] = {
		{ "", "not a JSON object" },
		{ "[]", "not a JSON object" },
		{ "{\"frames\":{}}", "\"frames\": expected an array" },
		{ "{\"frames\":[{\"status\":\"fine\"}]}", "an unknown status" },
		{ "{\"frames\":[{\"status\":1}]}",
		    "status: expected a string" },
		{ "{\"frames\":[{\"frames\":[{\"line\":-1}]}]}",
		    "line: expected a 32-bit count" },
		{ "{\"frames\":[{\"frames\":[{\"inlined\":1}]}]}",
		    "inlined: expected true or false" },
		{ "{\"modules\":[],\"frames\":[]} x", "malformed JSON" },
	};
	struct symout_answer ans;
	char why[256], name[96];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(name, sizeof(name), "refused: %s", bad[i].body);
		ok(symout_parse(bad[i].body, strlen(bad[i].body), &ans, why,
		       sizeof(why)) == -1 &&
			strncmp(why, bad[i].why, strlen(bad[i].why)) == 0,
		    name);
		if (strncmp(why, bad[i].why, strlen(bad[i].why)) != 0)
			printf("#   why: %s\n", why);
		ok(ans.naddrs == 0 && ans.addrs == NULL, "and nothing kept");
	}
}

static void
test_frames(void)
{
	struct perfscript_frame f;
	const char *l;

	l = "\t            11b4 [unknown] (/tmp/perftry/hot.stripped)";
	ok(perfscript_frame_parse(l, strlen(l), &f) == 1,
	    "a callchain entry perf could not name");
	is_int(f.addr, 0x11b4, "its address");
	ok(f.callchain && !f.has_dsoff, "a callchain entry, no dsoff");
	ok(f.dso_end - f.dso_at == 25 &&
		memcmp(l + f.dso_at, "/tmp/perftry/hot.stripped", 25) == 0,
	    "its DSO");
	ok(memcmp(l + f.sym_at, "[unknown]", 9) == 0 &&
		f.sym_end == f.sym_at + 9,
	    "the symbol's place");
	l = "hot  9331 10082.710880:     250000 cpu-clock:      "
	    "55cdab760145 [unknown] (/tmp/p)  ";
	ok(perfscript_frame_parse(l, strlen(l), &f) == 1 && !f.callchain &&
		f.addr == 0x55cdab760145,
	    "a sample's own frame, after its fields (trailing blanks too)");
	l = "     7f8b221800af [unknown] (/usr/lib/x86_64-linux-gnu/"
	    "libc.so.6+0x1c4b5)";
	ok(perfscript_frame_parse(l, strlen(l), &f) == 1 && f.has_dsoff &&
		f.dsoff == 0x1c4b5 &&
		f.dso_end - f.dso_at ==
		    strlen("/usr/lib/x86_64-linux-gnu/libc.so.6"),
	    "-F +dsoff: the offset, and the DSO without it");
	l = "\t  2a0f0 [unknown] (/usr/lib/libstdc++.so.6)";
	ok(perfscript_frame_parse(l, strlen(l), &f) == 1 && !f.has_dsoff &&
		l[f.dso_end - 1] == '6',
	    "a '+' in a DSO's name is no dsoff");
	l = "\t  1000 [unknown] (/opt/a (b)/lib.so)";
	ok(perfscript_frame_parse(l, strlen(l), &f) == 1 &&
		memcmp(l + f.dso_at, "/opt/a (b)/lib.so", 17) == 0,
	    "parentheses in a DSO's name");
	l = "\t  1000 [unknown] ([vdso])";
	ok(perfscript_frame_parse(l, strlen(l), &f) == 1, "[vdso] is read");
	l = "\t  150af handle_intel.constprop.0+0x2f (/usr/lib/ld.so)";
	ok(perfscript_frame_parse(l, strlen(l), &f) == 0,
	    "a frame perf named is left alone");
	l = "\t       0 [unknown] ([unknown])";
	ok(perfscript_frame_parse(l, strlen(l), &f) == 0,
	    "no DSO: nothing to ask");
	l = "\tffffffff816ac7a1 [unknown] ([kernel.kallsyms])";
	ok(perfscript_frame_parse(l, strlen(l), &f) == 0,
	    "kernel frames are left alone");
	l = "\tx11b4 [unknown] (/x)";
	ok(perfscript_frame_parse(l, strlen(l), &f) == 0,
	    "an address glued to other text is none");
	l = "\t11112222333344445 [unknown] (/x)";
	ok(perfscript_frame_parse(l, strlen(l), &f) == 0,
	    "an address beyond 64 bits is none");
	l = "  dl-cacheinfo.h:267";
	ok(perfscript_frame_parse(l, strlen(l), &f) == 0, "a srcline line");
	ok(perfscript_frame_parse("", 0, &f) == 0 &&
		perfscript_frame_parse(")", 1, &f) == 0 &&
		perfscript_frame_parse(" (x)", 4, &f) == 0,
	    "short lines");
}

static void
test_maps(void)
{
	struct perfscript_maps *maps = perfscript_maps_new();
	struct perfscript_mmap m;
	struct perfscript_frame f;
	uint64_t off = 0;
	const char *mm[] = {
		"               p  9039  9642.236484: PERF_RECORD_MMAP2 "
		"9039/9039: [0x55cdab760000(0x1000) @ 0x1000 fe:00 11175055 "
		"1680696006]: r-xp /tmp/perftry/p",
		"PERF_RECORD_MMAP -1/0: [0xffffffff81000000(0x1276508) @ "
		"0xffffffff81000000]: x [kernel.kallsyms]_text",
		"PERF_RECORD_MMAP2 1/1: [0x7f0000000000(0x2000) @ 0 00:00 0 "
		"0]: "
		"r-xp /tmp/perftry/p",
	};
	const char *l;

	ok(maps != NULL, "a map set");
	ok(perfscript_mmap_parse(mm[0], strlen(mm[0]), &m) == 1 &&
		m.start == 0x55cdab760000 && m.len == 0x1000 &&
		m.pgoff == 0x1000 &&
		strncmp(mm[0] + m.path_at, "/tmp/perftry/p", 14) == 0 &&
		m.path_end == strlen(mm[0]),
	    "an MMAP2 event read");
	ok(perfscript_maps_add(maps, mm[0], &m) == 0, "and kept");
	ok(perfscript_mmap_parse(mm[1], strlen(mm[1]), &m) == 1 &&
		m.pgoff == 0xffffffff81000000 &&
		strcmp(mm[1] + m.path_at, "[kernel.kallsyms]_text") == 0,
	    "an MMAP event read");
	l = "p 1 2.0: 1 cpu-clock:  55cdab760145 [unknown] (/tmp/perftry/p)";
	perfscript_frame_parse(l, strlen(l), &f);
	ok(perfscript_offset(maps, l, &f, &off) == 0 && off == 0x1145,
	    "a process address through its mapping");
	l = "p 1 2.0: 1 cpu-clock:  55cdab762145 [unknown] (/tmp/perftry/p)";
	perfscript_frame_parse(l, strlen(l), &f);
	ok(perfscript_offset(maps, l, &f, &off) == -1,
	    "a sample's address no mapping covers cannot be used");
	l = "\t55cdab762145 [unknown] (/tmp/perftry/p)";
	perfscript_frame_parse(l, strlen(l), &f);
	ok(perfscript_offset(maps, l, &f, &off) == 0 && off == 0x55cdab762145,
	    "a callchain entry no mapping covers is perf's offset");
	l = "\t55cdab760145 [unknown] (/tmp/perftry/q)";
	perfscript_frame_parse(l, strlen(l), &f);
	ok(perfscript_offset(maps, l, &f, &off) == 0 && off == 0x55cdab760145,
	    "another file's mapping is not used");
	perfscript_mmap_parse(mm[2], strlen(mm[2]), &m);
	perfscript_maps_add(maps, mm[2], &m);
	l = "\t7f0000001010 [unknown] (/tmp/perftry/p)";
	perfscript_frame_parse(l, strlen(l), &f);
	ok(perfscript_offset(maps, l, &f, &off) == 0 && off == 0x1010,
	    "a process address on a callchain line (perf 6.5)");
	l = "\t7f0000001010 [unknown] (/tmp/perftry/p+0x4010)";
	perfscript_frame_parse(l, strlen(l), &f);
	ok(perfscript_offset(maps, l, &f, &off) == 0 && off == 0x4010,
	    "a dsoff wins");
	ok(perfscript_mmap_parse("PERF_RECORD_MMAP2 1/1: [0x1(0x0) @ 0]: r "
				 "/x",
	       40, &m) == 0,
	    "an empty mapping is none");
	ok(perfscript_mmap_parse("PERF_RECORD_MMAP2 1/1: [0x1(0x1) @ 0]: r ",
	       40, &m) == 0,
	    "a mapping without a path is none");
	perfscript_maps_free(maps);
}

static void
test_buildids(void)
{
	struct buildid id;
	size_t at, end;
	const char *l = "ba4a6ebe98b61dcf6dc35fec76e5152e82f95774 /tmp/a b\n";

	ok(perfscript_buildid_parse(l, strlen(l), &id, &at, &end) == 1 &&
		id.len == 20 && id.bytes[0] == 0xba && end - at == 8 &&
		memcmp(l + at, "/tmp/a b", 8) == 0,
	    "a perf buildid-list line");
	l = "e17735e083bee5962b452ede4e28f9520fb75fa7 [vdso]";
	ok(perfscript_buildid_parse(l, strlen(l), &id, &at, &end) == 1 &&
		strcmp(l + at, "[vdso]") == 0,
	    "a [vdso] line");
	l = "xyz /tmp/a";
	ok(perfscript_buildid_parse(l, strlen(l), &id, &at, &end) == 0,
	    "not hex: no line");
	l = "ba4a6ebe98b61dcf6dc35fec76e5152e82f95774";
	ok(perfscript_buildid_parse(l, strlen(l), &id, &at, &end) == 0,
	    "no path: no line");
}

static const char *
written(const char *line, const struct perfscript_frame *f,
    const struct symout_addr *a)
{
	static char *buf;
	size_t len;
	FILE *fp;

	free(buf);
	buf = NULL;
	if ((fp = open_memstream(&buf, &len)) == NULL)
		return "";
	perfscript_write(fp, line, strlen(line), f, a);
	fclose(fp);
	return buf;
}

static void
test_write(void)
{
	struct symout_answer ans;
	struct perfscript_frame f;
	char why[256];
	const char *l;

	if (symout_parse(answer, strlen(answer), &ans, why, sizeof(why)) == -1)
		return;
	l = "\t            1174 [unknown] (/tmp/inl4)";
	perfscript_frame_parse(l, strlen(l), &f);
	is_str(written(l, &f, &ans.addrs[0]),
	    "\t            1174 l1 (inlined)\n  " FILE_C ":2\n"
	    "\t            1174 l2 (inlined)\n  " FILE_C ":3\n"
	    "\t            1174 l3 (inlined)\n  " FILE_C ":4\n"
	    "\t            1174 work (/tmp/inl4)\n  " FILE_C ":5\n",
	    "an inlined chain written as perf -F +srcline --inline would");
	is_str(written(l, &f, &ans.addrs[2]),
	    "\t            1174 foo() (/tmp/inl4)\n",
	    "a frame without a line: no srcline");
	is_str(written(l, &f, &ans.addrs[4]),
	    "\t            1174 [unknown] "
	    "(/tmp/inl4)\n",
	    "a missing frame written unchanged");
	is_str(written(l, &f, &ans.addrs[3]),
	    "\t            1174 [unknown] "
	    "(/tmp/inl4)\n",
	    "an address in no function written unchanged");
	l = "hot 9 1.5: 1 cpu-clock:\t1174 [unknown] (/tmp/inl4) ";
	perfscript_frame_parse(l, strlen(l), &f);
	ans.addrs[0].nframes = 2;
	is_str(written(l, &f, &ans.addrs[0]),
	    "hot 9 1.5: 1 cpu-clock:\t1174 l1 (inlined)\n  " FILE_C ":2\n"
	    "                       \t1174 l2 (/tmp/inl4) \n  " FILE_C ":3\n",
	    "a sample's fields blanked under its first line");
	ans.addrs[0].nframes = 4;
	symout_answer_free(&ans);
}

int
main(void)
{
	test_answer();
	test_bad_answers();
	test_frames();
	test_maps();
	test_buildids();
	test_write();
	return tap_done();
}
