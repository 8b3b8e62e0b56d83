/*
 * conf/diag.c: the problems found while loading a configuration
 * (conf/diag.h).  Uses nothing else of conf/; runs at start-up, on one
 * thread.
 */
#include "conf/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A NULL diag (the embedded defaults) drops the message. */
void
config_diag_add(struct config_diag *diag, const char *fmt, ...)
{
	va_list ap;
	char *msg, **v;
	const char **o;
	int len;

	if (diag == NULL)
		return;
	va_start(ap, fmt);
	len = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if ((o = realloc(diag->opts, (diag->n + 1) * sizeof(*o))) == NULL) {
		free(msg);
		return;
	}
	diag->opts = o;
	v = realloc(diag->msgs, (diag->n + 1) * sizeof(*v));
	if (v == NULL) {
		free(msg);
		return;
	}
	o[diag->n] = NULL;
	v[diag->n++] = msg;
	diag->msgs = v;
}

void
config_diag_about(struct config_diag *diag, const char *name)
{
	if (diag != NULL && diag->n > 0)
		diag->opts[diag->n - 1] = name;
}

void
config_diag_free(struct config_diag *diag)
{
	size_t i;

	for (i = 0; i < diag->n; i++)
		free(diag->msgs[i]);
	free(diag->msgs);
	free(diag->opts);
	diag->msgs = NULL;
	diag->opts = NULL;
	diag->n = 0;
}

const char *
config_shown(const char *value, char *buf, size_t size)
{
	size_t i;

	for (i = 0; value[i] != '\0' && i + 4 < size; i++) {
		unsigned char c = (unsigned char)value[i];

		buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	if (value[i] != '\0') {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}
