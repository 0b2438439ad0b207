/*
 * serve_peers.c - `unhex serve --target querier --querier.ingesters`: the
 * list of ingesters a querier asks for their heads, and the token it
 * sends them (read from a file or the environment, never argv).
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "cli.h"

#define TOKEN_FILE_MAX 4096

int cli_peers_parse(const char *list, char ***out, size_t *n, struct err_msg *msg)
{
	char *copy = strdup(list), *save = NULL, *tok;
	char **v = NULL;
	size_t k = 0;

	if (!copy)
		return ERR_NOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char **nv;

		if (strncmp(tok, "http://", 7) && strncmp(tok, "https://", 8)) {
			err_set(msg, ERR_INVALID, "\"%s\" is not an http:// or https:// URL", tok);
			goto fail;
		}
		if (k >= CLI_MAX_PEERS) {
			err_set(msg, ERR_INVALID, "more than %d ingesters", CLI_MAX_PEERS);
			goto fail;
		}
		nv = realloc(v, (k + 1) * sizeof(*v));
		if (!nv || !(nv[k] = strdup(tok))) {
			v = nv ? nv : v;
			err_set(msg, ERR_NOMEM, "out of memory");
			goto fail;
		}
		v = nv;
		k++;
	}
	free(copy);
	if (!k) {
		free(v);
		return err_set(msg, ERR_INVALID, "no ingester URL");
	}
	*out = v;
	*n = k;
	return 0;
fail:
	cli_peers_free(v, k);
	free(copy);
	return ERR_INVALID;
}

void cli_peers_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int cli_peer_token(const char *file, char **out, struct err_msg *msg)
{
	const char *env = getenv("UNHEX_INGESTER_TOKEN");
	struct buf b;
	int rc;

	*out = NULL;
	if (!file) {
		if (env && env[0] && !(*out = strdup(env)))
			return ERR_NOMEM;
		return 0;
	}
	buf_init(&b, TOKEN_FILE_MAX);
	rc = cli_read_file(file, &b, msg);
	if (!rc) {
		size_t n = strcspn(b.data ? b.data : "", "\r\n");
		if (!n)
			rc = err_set(msg, ERR_INVALID, "%s: no token on its first line", file);
		else if (!(*out = strndup(b.data, n)))
			rc = ERR_NOMEM;
	}
	buf_release(&b);
	return rc;
}
