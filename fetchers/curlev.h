/*
 * fetchers/curlev.h: libcurl's multi interface driven by one libevent loop.
 *
 * Every upstream transfer is an easy handle added here; libcurl tells us
 * which sockets to watch and when its next timeout is, and we call
 * curl_multi_socket_action from libevent callbacks.  No thread per
 * transfer, no blocking call: DNS uses libcurl's threaded resolver.
 * Everything runs on the thread of the event base given to curlev_new.
 */
#ifndef FETCHERS_CURLEV_H
#define FETCHERS_CURLEV_H

#include <curl/curl.h>

struct event_base;
struct curlev;

/* Called on the loop when an added transfer ends, with its result. */
typedef void (*curlev_done_fn)(CURL *easy, CURLcode rc, void *arg);

/* curl_global_init must have run.  NULL when out of memory. */
struct curlev *curlev_new(struct event_base *base);
/* Ends every transfer without calling their done callbacks. */
void curlev_free(struct curlev *cv);

/* Start easy; done(easy, rc, arg) runs when it ends.  -1 on failure. */
int curlev_add(struct curlev *cv, CURL *easy, curlev_done_fn done, void *arg);
/* Stop easy before it ended; its done callback will not run. */
void curlev_remove(struct curlev *cv, CURL *easy);

#endif /* FETCHERS_CURLEV_H */
