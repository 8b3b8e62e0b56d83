/*
 * daemon/access.h: who may use which class of endpoints.
 *
 * Rules come from "access = CLASS RULE ..." lines; a rule is one or more
 * conditions joined by '+' (all must hold): any, addr=CIDR, token (a
 * bearer token of token-file whose scopes name the class), subject=DN (a
 * verified client certificate) and ca=FILE (verified by the listener whose
 * client-ca is FILE).  A class without lines keeps its default (see
 * access_new).  Tokens are stored hashed (SHA-256, hex) and compared
 * hashed, in constant time; so is the admin-token.
 *
 * A set is made whole from one configuration and never changes: SIGHUP
 * makes another (daemon/reload.c), reading token-file and admin-token
 * again.  Those files fail closed: a line that is not valid is dropped
 * (and said), a file that cannot be read leaves no token of it valid.
 * Nothing removed from a file stays valid.  A configuration file that
 * does not load gets access_new_failsafe's set, which trusts only what it
 * can read.
 *
 * Checks may run on any thread at once, without a lock.
 */
#ifndef DAEMON_ACCESS_H
#define DAEMON_ACCESS_H

#include <stddef.h>

#include "daemon/request.h"

struct config;
struct access;

enum access_class {
	ACCESS_READ, /* /buildid/... */
	ACCESS_METADATA,
	ACCESS_METRICS,
	ACCESS_STATUS,
	ACCESS_ADMIN,
	ACCESS_UPLOAD,
	ACCESS_NCLASSES
};

/* Every class, as a bit set (1 << class). */
#define ACCESS_ALL ((1u << ACCESS_NCLASSES) - 1)

enum access_verdict {
	ACCESS_ALLOW,
	ACCESS_UNAUTHORIZED, /* 401: no credentials, or bad ones */
	ACCESS_FORBIDDEN, /* 403 */
};

/* What a request shows about its client. */
struct access_who {
	const char *peer; /* the socket peer's address, numeric */
	struct slice forwarded_for; /* X-Forwarded-For, trusted from proxies */
	struct slice authorization;
	const char *subject; /* verified client certificate; "" when none */
	const char *client_ca; /* the client-ca that verified it; NULL: none */
};

/* Told each line of a file that was dropped, and why ("FILE:LINE: ..."). */
typedef void (*access_say_fn)(void *arg, const char *msg);

/*
 * The rules of cfg (access, trusted-proxy, admin-access, admin-token,
 * token-file).  Defaults of a class without lines: read and metadata
 * open to all; metrics and status as metrics-access; upload a token;
 * admin as admin-access.  While admin-token is set, an admin request also
 * needs a bearer token with the admin scope (the admin-token, or a
 * token-file token), whatever the admin lines say, as an upload needs an
 * upload-scoped one.  say (may be NULL) hears of each dropped token line.
 * NULL with err on a bad rule, a subject= rule whose CA is not clear, or
 * a token or admin-token file that cannot be read.
 */
struct access *access_new(const struct config *cfg, access_say_fn say,
    void *arg, char *err, size_t errlen);
void access_free(struct access *a);

/*
 * The rules of a configuration file that did not load (a failed reload),
 * which never keep anything of before and deny what they cannot read:
 * each access line that parses applies; a line that does not makes its
 * class deny every request (every class, when its class word is not one
 * either); so does a rule no listener can meet (ca=, subject=); a
 * trusted-proxy that does not parse makes every class deny; and so does
 * each class of closed, a bit set (1 << class) of what the caller knows
 * the file failed to say (metrics-access, admin-access, admin-token: see
 * daemon/reload.c).  Token files are read as access_new reads them, a
 * file that cannot be read leaving none of its tokens valid.  Each
 * problem goes to say.  NULL only when out of memory.
 */
struct access *access_new_failsafe(const struct config *cfg, unsigned closed,
    access_say_fn say, void *arg);
/* The classes a denies to every client, as a bit set (1 << class). */
unsigned access_closed(const struct access *a);

/*
 * May who use cls?  Uploads need an upload-scoped token whatever the
 * rules say; admin requests an admin-scoped one while admin-token is set.
 * On a denial *why is a one-line reason for the client.
 */
enum access_verdict access_check(struct access *a, enum access_class cls,
    const struct access_who *who, const char **why);

/* The class's name as rules spell it. */
const char *access_class_name(enum access_class cls);

/*
 * SHA-256 of token (len bytes) as 64 lowercase hex digits and a NUL,
 * into hex (65 bytes): how token-file stores it.  -1 on failure.
 */
int access_token_hash(const char *token, size_t len, char hex[65]);

/*
 * Scopes as token lines spell them, a comma list of class names or "all",
 * into a class bit set (1 << class): 0, or -1 with why naming the word
 * that is not a scope.
 */
int access_scopes_parse(const char *s, unsigned *scopes, char *why,
    size_t whylen);

/*
 * One line of token-file, "SHA256HEX SCOPES [NAME]" ('#' starts a
 * comment): 1 with hash and *scopes, 0 for a line without a token, -1
 * with why.  The daemon reads token-file with it and dbgmirror token
 * checks the line it prints with it.
 */
int access_token_line(const char *line, char hash[65], unsigned *scopes,
    char *why, size_t whylen);

/*
 * What in the access configuration weakens a default or needs saying
 * (access = admin lines over admin-access, rules open to every client,
 * trusted-proxy over every address, subject= rules no listener can
 * meet): say(arg, message) for each.  The number said.
 */
unsigned access_audit(const struct access *a, const struct config *cfg,
    access_say_fn say, void *arg);

#endif /* DAEMON_ACCESS_H */
