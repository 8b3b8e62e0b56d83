/*
 * fetchers/curlev.c: libcurl multi, driven by libevent.
 *
 * libcurl's socket callback creates, changes or drops one libevent event
 * per socket (kept with curl_multi_assign); its timer callback arms one
 * timer.  Both event callbacks call curl_multi_socket_action and then
 * collect finished transfers.  A transfer's done callback may add or
 * remove transfers itself: the list of finished ones is read with
 * curl_multi_info_read until empty, which stays valid across such calls.
 */
#include "fetchers/curlev.h"

#include <event2/event.h>
#include <stdlib.h>

struct curlev {
	struct event_base *base;
	CURLM *multi;
	struct event *timer;
};

/* What curlev keeps with each easy handle (CURLOPT_PRIVATE). */
struct transfer {
	curlev_done_fn done;
	void *arg;
};

static void
check_done(struct curlev *cv)
{
	struct transfer *tr;
	CURLMsg *msg;
	CURL *easy;
	CURLcode rc;
	int left;

	while ((msg = curl_multi_info_read(cv->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE)
			continue;
		easy = msg->easy_handle;
		rc = msg->data.result;
		tr = NULL;
		curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&tr);
		curl_multi_remove_handle(cv->multi, easy);
		curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
		if (tr != NULL) {
			tr->done(easy, rc, tr->arg);
			free(tr);
		}
	}
}

static void
curlev_socket_event_cb(evutil_socket_t fd, short what, void *arg)
{
	struct curlev *cv = arg;
	int running, action = 0;

	if (what & EV_READ)
		action |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		action |= CURL_CSELECT_OUT;
	curl_multi_socket_action(cv->multi, fd, action, &running);
	check_done(cv);
}

static void
curlev_timer_event_cb(evutil_socket_t fd, short what, void *arg)
{
	struct curlev *cv = arg;
	int running;

	curl_multi_socket_action(cv->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	check_done(cv);
}

static int
curlev_socket_cb(CURL *easy, curl_socket_t s, int what, void *userp,
    void *socketp)
{
	struct curlev *cv = userp;
	struct event *ev = socketp;
	short flags = EV_PERSIST;

	if (what == CURL_POLL_REMOVE) {
		if (ev != NULL) {
			event_free(ev);
			curl_multi_assign(cv->multi, s, NULL);
		}
		return 0;
	}
	if (what & CURL_POLL_IN)
		flags |= EV_READ;
	if (what & CURL_POLL_OUT)
		flags |= EV_WRITE;
	if (ev != NULL)
		event_free(ev);
	ev = event_new(cv->base, s, flags, curlev_socket_event_cb, cv);
	if (ev == NULL || event_add(ev, NULL) == -1) {
		if (ev != NULL)
			event_free(ev);
		curl_multi_assign(cv->multi, s, NULL);
		return -1;
	}
	curl_multi_assign(cv->multi, s, ev);
	return 0;
}

static int
curlev_timer_cb(CURLM *multi, long ms, void *userp)
{
	struct curlev *cv = userp;
	struct timeval tv;

	if (ms < 0) {
		evtimer_del(cv->timer);
		return 0;
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	return evtimer_add(cv->timer, &tv);
}

struct curlev *
curlev_new(struct event_base *base)
{
	struct curlev *cv;

	if ((cv = calloc(1, sizeof(*cv))) == NULL)
		return NULL;
	cv->base = base;
	cv->multi = curl_multi_init();
	cv->timer = evtimer_new(base, curlev_timer_event_cb, cv);
	if (cv->multi == NULL || cv->timer == NULL) {
		curlev_free(cv);
		return NULL;
	}
	curl_multi_setopt(cv->multi, CURLMOPT_SOCKETFUNCTION, curlev_socket_cb);
	curl_multi_setopt(cv->multi, CURLMOPT_SOCKETDATA, cv);
	curl_multi_setopt(cv->multi, CURLMOPT_TIMERFUNCTION, curlev_timer_cb);
	curl_multi_setopt(cv->multi, CURLMOPT_TIMERDATA, cv);
	/* Many clients of one upstream share a few reused connections. */
	curl_multi_setopt(cv->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 16L);
	curl_multi_setopt(cv->multi, CURLMOPT_PIPELINING,
	    (long)CURLPIPE_MULTIPLEX);
	return cv;
}

void
curlev_free(struct curlev *cv)
{
	if (cv == NULL)
		return;
	if (cv->multi != NULL)
		curl_multi_cleanup(cv->multi);
	if (cv->timer != NULL)
		event_free(cv->timer);
	free(cv);
}

int
curlev_add(struct curlev *cv, CURL *easy, curlev_done_fn done, void *arg)
{
	struct transfer *tr;

	if ((tr = malloc(sizeof(*tr))) == NULL)
		return -1;
	tr->done = done;
	tr->arg = arg;
	curl_easy_setopt(easy, CURLOPT_PRIVATE, tr);
	if (curl_multi_add_handle(cv->multi, easy) != CURLM_OK) {
		curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
		free(tr);
		return -1;
	}
	return 0;
}

void
curlev_remove(struct curlev *cv, CURL *easy)
{
	struct transfer *tr = NULL;

	curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&tr);
	curl_multi_remove_handle(cv->multi, easy);
	curl_easy_setopt(easy, CURLOPT_PRIVATE, NULL);
	free(tr);
}
