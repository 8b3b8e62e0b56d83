/*
 * daemon/tls.c: OpenSSL server contexts for the HTTPS listeners.
 *
 * Built on the main thread at start-up and on SIGHUP; read by event-loop
 * threads only through SSL_new, which takes its own reference.
 */
#include "daemon/tls.h"

#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "conf/config.h"

/* The first queued OpenSSL error as text, after what. */
static void
tls_error(char *err, size_t errlen, const char *what, const char *file)
{
	unsigned long e = ERR_get_error();
	char msg[256] = "unknown error";

	if (e != 0)
		ERR_error_string_n(e, msg, sizeof(msg));
	ERR_clear_error();
	snprintf(err, errlen, "%s %s: %s", what, file, msg);
}

SSL_CTX *
tls_ctx_new(const struct config_listen *l, char *err, size_t errlen)
{
	static const unsigned char sid[] = "dbgmirrord";
	SSL_CTX *ctx;
	int mode;

	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		snprintf(err, errlen, "TLS: out of memory");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx,
	    SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
		SSL_OP_ENABLE_KTLS);
	/* Writes resume from wherever the last one stopped. */
	SSL_CTX_set_mode(ctx,
	    SSL_MODE_ENABLE_PARTIAL_WRITE |
		SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
	if (SSL_CTX_use_certificate_chain_file(ctx, l->cert) != 1) {
		tls_error(err, errlen, "cert", l->cert);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, l->key, SSL_FILETYPE_PEM) != 1) {
		tls_error(err, errlen, "key", l->key);
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		tls_error(err, errlen, "key does not match cert", l->cert);
		goto fail;
	}
	if (l->client_ca != NULL) {
		STACK_OF(X509_NAME) * names;

		if (SSL_CTX_load_verify_locations(ctx, l->client_ca, NULL) !=
		    1) {
			tls_error(err, errlen, "client-ca", l->client_ca);
			goto fail;
		}
		if ((names = SSL_load_client_CA_file(l->client_ca)) != NULL)
			SSL_CTX_set_client_CA_list(ctx, names);
		mode = SSL_VERIFY_PEER;
		if (!l->client_cert_optional)
			mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
		SSL_CTX_set_verify(ctx, mode, NULL);
		SSL_CTX_set_app_data(ctx, l->client_ca);
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

void
tls_peer_subject(SSL *ssl, char *buf, size_t len)
{
	X509 *cert;
	BIO *mem;
	int n;

	buf[0] = '\0';
	if ((cert = SSL_get0_peer_certificate(ssl)) == NULL ||
	    SSL_get_verify_result(ssl) != X509_V_OK)
		return;
	if ((mem = BIO_new(BIO_s_mem())) == NULL)
		return;
	if (X509_NAME_print_ex(mem, X509_get_subject_name(cert), 0,
		XN_FLAG_RFC2253) >= 0) {
		n = BIO_read(mem, buf, (int)len - 1);
		buf[n > 0 ? n : 0] = '\0';
	}
	BIO_free(mem);
}

const char *
tls_peer_ca(SSL *ssl)
{
	return SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
}

int
tls_ktls_send(SSL *ssl)
{
	return BIO_get_ktls_send(SSL_get_wbio(ssl)) > 0;
}
