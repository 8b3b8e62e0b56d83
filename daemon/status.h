/*
 * daemon/status.h: the status page (/status), an HTML page of the
 * daemon's state for an operator to keep open; see status.c.
 */
#ifndef DAEMON_STATUS_H
#define DAEMON_STATUS_H

#include <stddef.h>

struct config;
struct flight_table;
struct index_reader;

/*
 * The page, malloc'd, its length in *len; NULL when out of memory.  On an
 * event-loop thread: rd is the thread's reader (no transaction open), used
 * for the most missed build-ids; ft NULL shows no fills.
 */
char *status_render(const struct config *cfg, struct flight_table *ft,
    struct index_reader *rd, size_t *len);

#endif /* DAEMON_STATUS_H */
