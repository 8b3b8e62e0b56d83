/*
 * daemon/httpdate.h: HTTP dates (RFC 9110 5.6.7), locale-independent.
 */
#ifndef DAEMON_HTTPDATE_H
#define DAEMON_HTTPDATE_H

#include <stddef.h>
#include <time.h>

/* "Sun, 06 Nov 1994 08:49:37 GMT" and its NUL. */
#define HTTPDATE_LEN 30

void httpdate_format(time_t t, char out[HTTPDATE_LEN]);

/*
 * Parse an IMF-fixdate, or the obsolete RFC 850 and asctime forms that
 * recipients must still accept.  Returns 0, or -1 when s is not a date.
 */
int httpdate_parse(const char *s, size_t len, time_t *t);

#endif /* DAEMON_HTTPDATE_H */
