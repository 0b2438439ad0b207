/* hex.h - hexadecimal digits, for parsers of build IDs, %-escapes and \u escapes. */
#ifndef UNHEX_BASE_HEX_H
#define UNHEX_BASE_HEX_H

/* Returns the value of hex digit `c` (either case), or -1. */
static inline int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
