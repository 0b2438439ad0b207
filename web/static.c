/*
 * static.c - serves the browser UI (the files of web/ui), embedded into the binary at
 * build time by web/ui_embed.cmake, so a running server never reads the
 * source tree.  GET / is index.html; any other path must name an embedded
 * file exactly (no directories, no "..": the lookup is a name comparison,
 * never a filesystem path).
 */
#include <string.h>

#include "web_int.h"

const struct web__asset *web__asset_find(const char *path)
{
	const char *name;

	if (!path || path[0] != '/')
		return NULL;
	name = path[1] ? path + 1 : "index.html";
	for (size_t i = 0; i < web__n_assets; i++)
		if (strcmp(web__assets[i].name, name) == 0)
			return &web__assets[i];
	return NULL;
}

const char *web__asset_type(const char *name)
{
	static const struct {
		const char *ext;
		const char *type;
	} types[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" },
		{ ".mjs", "text/javascript; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },
		{ ".svg", "image/svg+xml" },
		{ ".png", "image/png" },
		{ ".ico", "image/x-icon" },
		{ ".json", "application/json" },
		{ ".txt", "text/plain; charset=utf-8" },
	};
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].type;
	return "application/octet-stream";
}

void web__handle_static(struct web__req *rq, struct web__resp *rs)
{
	const struct web__asset *a = web__asset_find(rq->path);

	if (!a) {
		web__resp_text_error(rs, ERR_NOT_FOUND, "no such file (see docs/api.md)");
		return;
	}
	rs->status = 200;
	rs->content_type = web__asset_type(a->name);
	rs->cache_control = "no-cache";
	rs->extra_headers = "X-Content-Type-Options: nosniff\r\n";
	if (buf_append(&rs->body, a->data, a->len))
		web__resp_text_error(rs, ERR_NOMEM, "out of memory");
}
