/*
 * conf/help.c: --help's list of options, "did you mean", and the hints
 * for elfutils' debuginfod options (conf/help.h).
 *
 * The list walks the option table of conf/options.c through
 * config_option_info; the rest knows nothing of it.  Above the table,
 * below the loader (conf/config.c), which asks it for did-you-mean and
 * the hints.  No state, any thread.
 */
#include "conf/help.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conf/options.h"

/* Edits (insert, delete, replace) from a[0..an) to b; at most 64 long. */
static size_t
edit_distance(const char *a, size_t an, const char *b)
{
	size_t bn = strlen(b), row[65], i, j, diag, up;

	if (an > 64 || bn > 64)
		return SIZE_MAX;
	for (j = 0; j <= bn; j++)
		row[j] = j;
	for (i = 1; i <= an; i++) {
		diag = row[0];
		row[0] = i;
		for (j = 1; j <= bn; j++) {
			up = row[j];
			row[j] = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < row[j])
				row[j] = up + 1;
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			diag = up;
		}
	}
	return row[bn];
}

const char *
config_closest(const char *word, size_t len, const char *(*nth)(size_t))
{
	const char *name, *best = NULL;
	size_t i, d, bestd = SIZE_MAX;

	for (i = 0; (name = nth(i)) != NULL; i++)
		if ((d = edit_distance(word, len, name)) < bestd) {
			bestd = d;
			best = name;
		}
	if (bestd == 0 || bestd > (len + 2) / 3)
		return NULL;
	return best;
}

const char *
config_did_you_mean(const char *word, size_t len, const char *(*nth)(size_t),
    const char *prefix, char *buf, size_t buflen)
{
	const char *name = config_closest(word, len, nth);

	if (name == NULL)
		buf[0] = '\0';
	else
		snprintf(buf, buflen, " (did you mean %s%s?)", prefix, name);
	return buf;
}

/*
 * What elfutils' debuginfod options are here.  Its -F, -U and -R are
 * switches that say how the directories among its operands are scanned;
 * the hint takes the argument after them as such a directory.
 */
const char *
config_elfutils_hint(char c, const char *arg, char *buf, size_t buflen)
{
	static const struct {
		char c;
		const char *theirs, *ours, *more;
	} hints[] = {
		{ 'F', "DIR", "--scan-dir", "; repeat it for more" },
		{ 'U', "DIR", "--scan-packages", " (.deb, .rpm and Arch)" },
		{ 'R', "DIR", "--scan-packages", " (.deb, .rpm and Arch)" },
		{ 'p', "PORT", "--listen",
		    " (all addresses, as debuginfod; --listen 127.0.0.1:PORT "
		    "for this machine only)" },
		{ 't', "SECONDS", "--rescan-interval", "" },
		{ 'c', "N", "--workers", "" },
		{ 'd', "FILE", "--cache-dir",
		    ": the index is a directory's, not a file" },
	};
	const char *a;
	size_t i;

	for (i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
		if (hints[i].c != c)
			continue;
		a = arg != NULL ? arg : hints[i].theirs;
		snprintf(buf, buflen,
		    "elfutils' debuginfod -%c %s is dbgmirrord %s %s here%s", c,
		    a, hints[i].ours, c == 'd' ? "DIR" : a, hints[i].more);
		return buf;
	}
	return NULL;
}

void
config_usage(FILE *fp)
{
	struct config_option_info oi;
	size_t i, w, width = 0;

	for (i = 0; config_option_info(i, &oi) == 0; i++) {
		w = strlen(oi.name) + 1 + strlen(oi.metavar);
		if (w > width)
			width = w;
	}
	for (i = 0; config_option_info(i, &oi) == 0; i++)
		fprintf(fp, "  --%s %-*s  %s (default: %s)\n", oi.name,
		    (int)(width - strlen(oi.name) - 1), oi.metavar, oi.help,
		    oi.shown_default);
}
