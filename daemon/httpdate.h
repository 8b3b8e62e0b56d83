/*
 * daemon/httpdate.h: HTTP dates (RFC 9110 5.6.7), the ISO 8601 UTC times
 * of the log and the reports, and the common log format's time of an
 * access-log file, locale-independent.
 */
#ifndef DAEMON_HTTPDATE_H
#define DAEMON_HTTPDATE_H

#include <stddef.h>
#include <time.h>

/* "Sun, 06 Nov 1994 08:49:37 GMT" and its NUL. */
#define HTTPDATE_LEN 30

void httpdate_format(time_t t, char out[HTTPDATE_LEN]);

/* "1994-11-06T08:49:37Z" and its NUL. */
#define HTTPDATE_ISO_LEN 21

/* t as ISO 8601 in UTC, years clamped to 0000-9999 as for HTTP dates. */
void httpdate_iso(time_t t, char out[HTTPDATE_ISO_LEN]);

/* "06/Nov/1994:08:49:37 +0000" and its NUL. */
#define HTTPDATE_CLF_LEN 27

/* t as the common log format's time in UTC, years clamped the same way. */
void httpdate_clf(time_t t, char out[HTTPDATE_CLF_LEN]);

/*
 * Parse an IMF-fixdate, or the obsolete RFC 850 and asctime forms that
 * recipients must still accept.  Returns 0, or -1 when s is not a date.
 */
int httpdate_parse(const char *s, size_t len, time_t *t);

#endif /* DAEMON_HTTPDATE_H */
