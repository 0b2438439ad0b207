/*
 * token.c - `unhex token`: makes API tokens and the lines of the token
 * file that `unhex serve --auth.tokens` reads (docs/security.md).
 *
 *   unhex token new  --tenant T --scopes LIST [--name N] [--append FILE]
 *   unhex token hash --tenant T --scopes LIST [--name N]   (token on stdin)
 *
 * `new` draws 32 random bytes from the kernel (getrandom) and prints the
 * token, base64url with the prefix "uhx_", once, on stdout; the file only
 * ever holds its SHA-256.  `hash` turns a token made elsewhere (the old
 * --upload-token, say) into a line, reading it from stdin so it never
 * appears on a command line.  Exit status: 0, 1 on failure, 2 on usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "cli.h"
#include "web/web.h"

#define TOKEN_BYTES 32
#define TOKEN_MAX 512

static void token_help(FILE *f)
{
	fputs("usage: unhex token new  --tenant T --scopes LIST [--name N] [--append FILE]\n"
	      "       unhex token hash --tenant T --scopes LIST [--name N] < token\n"
	      "\n"
	      "Makes the lines of the token file of `unhex serve --auth.tokens FILE`:\n"
	      "\"sha256=<hex> tenant=<T> scopes=<LIST> name=<N>\" (docs/security.md).\n"
	      "\n"
	      "  new     prints a new random token on stdout (shown once), and appends its\n"
	      "          line to FILE (created with mode 0600) or prints it on stderr\n"
	      "  hash    reads a token from stdin and prints its line on stdout\n"
	      "\n"
	      "  --tenant T      the tenant the token acts for; '*' for every tenant\n"
	      "  --scopes LIST   comma-separated: ingest, query, upload, admin\n"
	      "  --name N        a label for the server's log (A-Z a-z 0-9 . _ @ -)\n"
	      "  --append FILE   (new) append the line to FILE\n"
	      "\n"
	      "Send `kill -HUP` to the server to use a changed file without a restart.\n",
	      f);
}

/* base64url without padding (RFC 4648 §5) of n bytes into out (4 * n / 3 + 2 bytes). */
static void b64url(const unsigned char *p, size_t n, char *out)
{
	static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	unsigned acc = 0;
	int bits = 0;

	for (size_t i = 0; i < n; i++) {
		acc = acc << 8 | p[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			*out++ = abc[(acc >> bits) & 63];
		}
	}
	if (bits)
		*out++ = abc[(acc << (6 - bits)) & 63];
	*out = '\0';
}

/* Appends `line` to `path`, created 0600 if needed. */
static int append(const char *path, const struct buf *line, struct err_msg *msg)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	ssize_t n;

	if (fd < 0)
		return err_set(msg, ERR_IO, "%s: %s", path, strerror(errno));
	n = write(fd, line->data, line->len);
	if (n != (ssize_t)line->len || fsync(fd)) {
		int rc = err_set(msg, ERR_IO, "%s: %s", path, strerror(errno ? errno : EIO));

		close(fd);
		return rc;
	}
	return close(fd) ? err_set(msg, ERR_IO, "%s: %s", path, strerror(errno)) : 0;
}

/* Reads one token from stdin: its first line, without the line end. */
static int read_token(char *out, size_t len, struct err_msg *msg)
{
	size_t n;

	if (!fgets(out, (int)len, stdin))
		return err_set(msg, ERR_INVALID, "no token on stdin");
	n = strcspn(out, "\r\n");
	if (out[n] == '\0' && n == len - 1)
		return err_set(msg, ERR_INVALID, "token longer than %d bytes", TOKEN_MAX);
	out[n] = '\0';
	return 0;
}

enum { OPT_TENANT = 256, OPT_SCOPES, OPT_NAME, OPT_APPEND, OPT_HELP };

int cli_token(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tenant", required_argument, NULL, OPT_TENANT },
		{ "scopes", required_argument, NULL, OPT_SCOPES },
		{ "name", required_argument, NULL, OPT_NAME },
		{ "append", required_argument, NULL, OPT_APPEND },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	const char *tenant = NULL, *scopes = NULL, *name = NULL, *file = NULL, *cmd;
	char token[TOKEN_MAX + 2];
	unsigned char raw[TOKEN_BYTES];
	struct err_msg msg;
	struct buf line;
	int c, rc, is_new;

	if (argc < 2 || strcmp(argv[1], "--help") == 0) {
		token_help(argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
	}
	cmd = argv[1];
	is_new = strcmp(cmd, "new") == 0;
	if (!is_new && strcmp(cmd, "hash") != 0)
		return cli_usage_error("token", "unknown subcommand \"%s\" (new or hash)", cmd);
	/* Options follow the subcommand, which stands in for argv[0]. */
	argc--;
	argv++;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case OPT_TENANT: tenant = optarg; break;
		case OPT_SCOPES: scopes = optarg; break;
		case OPT_NAME: name = optarg; break;
		case OPT_APPEND: file = optarg; break;
		case OPT_HELP: token_help(stdout); return CLI_EXIT_OK;
		default:
			return cli_bad_option("token", argv);
		}
	}
	if (optind < argc)
		return cli_extra_argument("token", argv);
	if (!tenant || !scopes)
		return cli_usage_error("token", "--tenant and --scopes are required");
	if (file && !is_new)
		return cli_usage_error("token", "--append goes with `token new`");
	err_clear(&msg);
	if (is_new) {
		if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
			fprintf(stderr, "unhex token: no random bytes: %s\n", strerror(errno));
			return CLI_EXIT_FAIL;
		}
		memcpy(token, "uhx_", 4);
		b64url(raw, sizeof(raw), token + 4);
	} else if (read_token(token, sizeof(token), &msg)) {
		fprintf(stderr, "unhex token: %s\n", msg.text);
		return CLI_EXIT_FAIL;
	}
	buf_init(&line, 4096);
	rc = web_token_line(token, strlen(token), tenant, scopes, name, &line, &msg);
	if (!rc && file)
		rc = append(file, &line, &msg);
	if (rc) {
		fprintf(stderr, "unhex token: %s\n", msg.text);
		explicit_bzero(token, sizeof(token));
		buf_release(&line);
		return rc == ERR_INVALID ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
	}
	if (!is_new)
		fwrite(line.data, 1, line.len, stdout);
	else if (!file)
		fprintf(stderr, "add this line to the token file:\n%.*s", (int)line.len, line.data);
	if (is_new)
		printf("%s\n", token);
	explicit_bzero(token, sizeof(token));
	buf_release(&line);
	return fflush(stdout) ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
