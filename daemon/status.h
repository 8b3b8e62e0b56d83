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
 * The page, malloc'd, its length in *len; NULL when out of memory.  On a
 * worker (the gauges count what the index holds): rd is a reader with no
 * transaction open, for the most missed build-ids (NULL: none shown); ft
 * NULL shows no fills.
 */
char *status_render(const struct config *cfg, struct flight_table *ft,
    struct index_reader *rd, size_t *len);

#endif /* DAEMON_STATUS_H */
