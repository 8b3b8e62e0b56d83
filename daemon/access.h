/*
 * daemon/access.h: who may use which class of endpoints.
 *
 * Rules come from "access = CLASS RULE ..." lines; a rule is one or more
 * conditions joined by '+' (all must hold): any, addr=CIDR, token (a
 * bearer token of token-file whose scopes name the class), subject=DN (a
 * verified client certificate).  A class without lines keeps its default
 * (see access_new).  Tokens are stored hashed (SHA-256, hex) and compared
 * hashed, in constant time.
 *
 * Checks may run on any event-loop thread at once; access_reload swaps
 * the token table under a lock.
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
};

/*
 * The rules of cfg (access, trusted-proxy, token-file).  Defaults of a
 * class without lines: read and metadata open to all; metrics and status
 * as metrics-access; upload a token.  Admin without lines is left to the
 * caller (admin-access and admin-token): access_has_rules says so.
 * NULL with err on a bad rule or an unreadable token file.
 */
struct access *access_new(const struct config *cfg, char *err, size_t errlen);
void access_free(struct access *a);

/* Read token-file again; on failure the old tokens stay, -1 with err. */
int access_reload(struct access *a, char *err, size_t errlen);

/* 1 when class cls has rules of its own or a default here. */
int access_has_rules(const struct access *a, enum access_class cls);

/*
 * May who use cls?  Uploads need an upload-scoped token whatever the
 * rules say.  On a denial *why is a one-line reason for the client.
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

#endif /* DAEMON_ACCESS_H */
