/*
 * daemon/hints.h: what dbgmirrord tells whoever started it, once it
 * serves: the next steps (daemon/hints.c).
 */
#ifndef DAEMON_HINTS_H
#define DAEMON_HINTS_H

struct config;
struct httpd;

/*
 * Log where to point the clients (DEBUGINFOD_URLS), a gdb line and the
 * status page; and when the configuration gives nothing to serve (no
 * source, scan directories missing or empty), how to add a source.  A
 * few lines; on the main thread at start-up.
 */
void hints_log(const struct config *cfg, struct httpd *h);

#endif /* DAEMON_HINTS_H */
