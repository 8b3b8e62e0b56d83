/*
 * daemon/symbolicate.h: POST /symbolicate and GET
 * /buildid/ID/symbolicate: build-ids and addresses in; functions, files,
 * lines and inline chains out (symbolizer/symjson.h has the JSON,
 * docs/symbolication.md the contract as served).
 */
#ifndef DAEMON_SYMBOLICATE_H
#define DAEMON_SYMBOLICATE_H

struct conn;
struct pool;
struct resolve_origin;
struct route;
struct symtabs;
struct symtabs_thread;

/*
 * What the endpoint answers from; all must outlive it.  The symbolicate-*
 * limits and the request path are each request's snapshot's
 * (conn_snapshot, daemon/snapshot.h).
 */
struct symbolicate_deps {
	struct pool *pool;
	struct symtabs *tabs; /* the open tables */
};

/*
 * Take the request on c for rt (ROUTE_SYMBOLICATE or
 * ROUTE_SYMBOLICATE_ID), its access checked, from a client of origin o
 * (its texts live as long as the exchange); tt is the tables' part of c's
 * thread.
 */
void symbolicate_start(const struct symbolicate_deps *d,
    struct symtabs_thread *tt, struct conn *c, const struct route *rt,
    const struct resolve_origin *o);

#endif /* DAEMON_SYMBOLICATE_H */
