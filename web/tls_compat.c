/*
 * tls_compat.c - makes Debian 12's civetweb usable with OpenSSL 3.
 *
 * Debian's libcivetweb1 (1.15) is built for OpenSSL 1.1's API and loads
 * OpenSSL at run time: dlopen("libssl.so"), then dlsym() of each function
 * it uses.  OpenSSL 3 has no symbol SSL_get_peer_certificate (its header
 * makes the name a macro for SSL_get1_peer_certificate), so civetweb's
 * pointer stays NULL and the server calls it on the first TLS handshake:
 * a segfault, for every TLS connection.
 *
 * This file is built alone as a shared library whose SONAME is
 * "libssl.so" (<build>/web/tls_compat/libssl.so) and which depends on
 * the real libssl.so.3.  Every unhex binary with the server links it, so
 * it is loaded at start; glibc's dlopen() returns an already loaded
 * object whose SONAME equals the requested name, so civetweb's
 * dlopen("libssl.so") gets this library, and its dlsym() searches it and
 * then its dependencies: the missing function from here, every other
 * from libssl.so.3.  The function is what OpenSSL 1.1 exported under
 * that name: the peer's certificate with its reference count raised.
 * web__tls_check_runtime() (tls.c) verifies the arrangement before a TLS
 * server starts, so a build without it fails at start, not at a client.
 */
#include <openssl/ssl.h>

#undef SSL_get_peer_certificate

X509 *SSL_get_peer_certificate(const SSL *s);
int unhex_tls_compat_present(void);

X509 *SSL_get_peer_certificate(const SSL *s)
{
	return SSL_get1_peer_certificate(s);
}

/* Referenced by tls.c, so a linker that drops unused libraries keeps this one. */
int unhex_tls_compat_present(void)
{
	return 1;
}
