/*
 * daemon/notify.c: the service manager's notifications (daemon/notify.h),
 * through libsystemd's sd_notify(), which does nothing without
 * NOTIFY_SOCKET.  Reloading carries MONOTONIC_USEC, as systemd (from
 * version 253, Type=notify-reload) wants it to tell reloads apart.
 */
#include "daemon/notify.h"

#include <event2/event.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "daemon/clock.h"
#include "daemon/log.h"

static struct event *watchdog_ev;

/* "PREFIX" and the STATUS= line from fmt, sent as one datagram. */
static void
send_status(const char *prefix, const char *fmt, va_list ap)
{
	char status[512];

	vsnprintf(status, sizeof(status), fmt, ap);
	if (sd_notifyf(0, "%sSTATUS=%s", prefix, status) < 0)
		log_warnx("%s: sd_notify failed", __func__);
}

void
notify_ready(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	send_status("READY=1\n", fmt, ap);
	va_end(ap);
}

void
notify_status(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	send_status("", fmt, ap);
	va_end(ap);
}

void
notify_reloading(void)
{
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading",
	    (unsigned long long)(clock_mono_ns() / 1000));
}

void
notify_stopping(void)
{
	sd_notify(0, "STOPPING=1\nSTATUS=stopping");
}

static void
watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
	sd_notify(0, "WATCHDOG=1");
}

int
notify_watchdog_start(struct event_base *base)
{
	uint64_t usec;
	struct timeval tv;

	if (sd_watchdog_enabled(0, &usec) <= 0)
		return 0;
	usec /= 2;
	tv.tv_sec = (time_t)(usec / 1000000);
	tv.tv_usec = (suseconds_t)(usec % 1000000);
	watchdog_ev = event_new(base, -1, EV_PERSIST, watchdog_cb, NULL);
	if (watchdog_ev == NULL || event_add(watchdog_ev, &tv) == -1)
		return -1;
	log_info("pinging the service manager's watchdog every %llu ms",
	    (unsigned long long)usec / 1000);
	sd_notify(0, "WATCHDOG=1");
	return 0;
}

void
notify_watchdog_stop(void)
{
	if (watchdog_ev != NULL)
		event_free(watchdog_ev);
	watchdog_ev = NULL;
}
