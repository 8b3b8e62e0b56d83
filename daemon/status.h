/*
 * daemon/status.h: the status page (/status), an HTML page of the
 * daemon's state for an operator to keep open; see status.c.
 */
#ifndef DAEMON_STATUS_H
#define DAEMON_STATUS_H

#include <stddef.h>

struct config;
struct flight_table;
struct httpd;
struct index_reader;
struct repos;

/* What the page reads besides daemon/metrics.h and the log. */
struct status_deps {
	const struct config *cfg;
	struct flight_table *ft; /* NULL: no fills shown */
	struct repos *repos; /* NULL: none */
	const struct httpd *httpd; /* NULL: the addresses as configured */
	/*
	 * A reader with no transaction open, for the most missed build-ids
	 * and what the repositories' indexes hold; NULL: not shown.
	 */
	struct index_reader *rd;
};

/*
 * The page, malloc'd, its length in *len; NULL when out of memory.  On a
 * worker: the gauges count what the index holds, and the disk is asked
 * how full it is.
 */
char *status_render(const struct status_deps *sd, size_t *len);

#endif /* DAEMON_STATUS_H */
