/*
 * daemon/tls.h: OpenSSL server contexts for the HTTPS listeners.
 *
 * One context per TLS listen line, made from its cert, key and client-ca
 * files (the configuration, which outlives every context, is where it
 * keeps the client-ca's path): TLS 1.2 and later, no renegotiation, kTLS asked for (the kernel
 * takes over record encryption when it can, so sendfile stays zero-copy).
 * A reload makes a fresh context; connections made before it keep the old
 * one (each SSL holds a reference), so none is dropped.
 */
#ifndef DAEMON_TLS_H
#define DAEMON_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

struct config_listen;

/* A context for l, or NULL with err saying which file is wrong and why. */
SSL_CTX *tls_ctx_new(const struct config_listen *l, char *err, size_t errlen);

/*
 * The subject of the client's verified certificate, RFC 2253
 * ("CN=ci,O=Example"), into buf; "" when it showed none.
 */
void tls_peer_subject(SSL *ssl, char *buf, size_t len);

/*
 * The client-ca file of the listener whose context ssl was made from:
 * the CA list that verified its client's certificate.  NULL when none.
 */
const char *tls_peer_ca(SSL *ssl);

/* 1 when the kernel encrypts what ssl sends (SSL_sendfile works). */
int tls_ktls_send(SSL *ssl);

#endif /* DAEMON_TLS_H */
