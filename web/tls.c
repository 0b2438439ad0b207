/*
 * tls.c - the server's TLS settings, applied to the SSL_CTX civetweb
 * creates (its init_ssl callback, server.c): certificate chain and key
 * from separate PEM files, TLS 1.2 as the oldest protocol, and for TLS 1.2
 * only ECDHE key exchange with AEAD ciphers (TLS 1.3's suites are all
 * AEAD with forward secrecy).  Also the start-time check that civetweb
 * will find a working OpenSSL (tls_compat.c explains the problem).
 *
 * civetweb calls libssl through the pointers it loaded from "libssl.so";
 * the SSL_CTX it hands here belongs to that same library (libssl.so.3,
 * through tls_compat), so the calls below act on it directly.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "web/web_int.h"

/* TLS 1.2: forward-secret key exchange, AEAD only. */
#define TLS12_CIPHERS "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!eNULL"

int unhex_tls_compat_present(void);

int web__tls_check_runtime(struct err_msg *msg)
{
	void *h;
	int ok;

	if (!unhex_tls_compat_present())
		return err_set(msg, ERR_UNAVAILABLE, "TLS: the civetweb compatibility library is missing");
	h = dlopen("libssl.so", RTLD_LAZY);
	if (!h)
		return err_set(msg, ERR_UNAVAILABLE,
			       "TLS: civetweb loads \"libssl.so\", which cannot be loaded (%s); "
			       "install OpenSSL's development package (Debian: libssl-dev)", dlerror());
	ok = dlsym(h, "SSL_get_peer_certificate") != NULL && dlsym(h, "TLS_server_method") != NULL;
	dlclose(h);
	if (!ok)
		return err_set(msg, ERR_UNAVAILABLE,
			       "TLS: the \"libssl.so\" civetweb would load lacks SSL_get_peer_certificate, "
			       "and civetweb would crash at the first handshake (web/tls_compat.c)");
	return 0;
}

/* OpenSSL's first queued error as text, for a message. */
static const char *ssl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_get_error();

	if (!e)
		return "unknown error";
	ERR_error_string_n(e, buf, len);
	ERR_clear_error();
	return buf;
}

int web__tls_setup(void *ssl_ctx, const char *cert, const char *key, struct err_msg *msg)
{
	SSL_CTX *ctx = ssl_ctx;
	char why[256];

	ERR_clear_error();
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
		return err_set(msg, ERR_INVALID, "TLS: certificate %s: %s", cert,
			       ssl_reason(why, sizeof(why)));
	if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
		return err_set(msg, ERR_INVALID, "TLS: private key %s: %s", key,
			       ssl_reason(why, sizeof(why)));
	if (SSL_CTX_check_private_key(ctx) != 1)
		return err_set(msg, ERR_INVALID, "TLS: the key %s does not match the certificate %s",
			       key, cert);
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_cipher_list(ctx, TLS12_CIPHERS) != 1)
		return err_set(msg, ERR_INVALID, "TLS: cannot restrict protocols and ciphers: %s",
			       ssl_reason(why, sizeof(why)));
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
				 SSL_OP_CIPHER_SERVER_PREFERENCE);
	return 0;
}
