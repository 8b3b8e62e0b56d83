/*
 * daemon/notify.h: telling the service manager (systemd, Type=notify) how
 * the daemon is: ready, reloading, stopping, a status line, and watchdog
 * pings.  Every call does nothing when NOTIFY_SOCKET is not set.  Main
 * thread only.
 */
#ifndef DAEMON_NOTIFY_H
#define DAEMON_NOTIFY_H

struct event_base;

/* Listening, and serving; status is the STATUS= line. */
void notify_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A reload (SIGHUP) begins; notify_ready() says when it is done. */
void notify_reloading(void);
void notify_stopping(void);
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * When the manager asked for a watchdog (WATCHDOG_USEC), ping it from
 * base's loop every half period: a loop that stops turning stops the
 * pings.  -1 when out of memory.
 */
int notify_watchdog_start(struct event_base *base);
void notify_watchdog_stop(void);

#endif /* DAEMON_NOTIFY_H */
