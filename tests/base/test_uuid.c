/* test_uuid.c - uuid_parse, uuid_format, uuid_new_v4 (base/uuid.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "base/err.h"
#include "base/uuid.h"

static const uint8_t want[UUID_BYTES] = { 0x7c, 0x9e, 0x66, 0x79, 0x74, 0x25, 0x40, 0xde,
					  0x94, 0x4b, 0xe0, 0x7f, 0xc1, 0xf9, 0x0a, 0xe7 };

static void test_parse_format(void **state)
{
	uint8_t id[UUID_BYTES];
	char text[UUID_TEXT + 1];
	const char *s = "7c9e6679-7425-40de-944b-e07fc1f90ae7";
	(void)state;

	assert_int_equal(uuid_parse(s, strlen(s), id), 0);
	assert_memory_equal(id, want, UUID_BYTES);
	uuid_format(id, text);
	assert_string_equal(text, s);
	memset(id, 0, sizeof(id));
	assert_int_equal(uuid_parse("7C9E6679742540DE944BE07FC1F90AE7", 32, id), 0);
	assert_memory_equal(id, want, UUID_BYTES);
	assert_false(uuid_is_nil(id));
	memset(id, 0, sizeof(id));
	assert_true(uuid_is_nil(id));
}

static void test_parse_refuses(void **state)
{
	static const char *const bad[] = {
		"7c9e6679-7425-40de-944b-e07fc1f90ae",   /* short */
		"7c9e6679-7425-40de-944b-e07fc1f90ae77", /* long */
		"7c9e6679x7425-40de-944b-e07fc1f90ae7",  /* not a dash */
		"7c9e667-97425-40de-944b-e07fc1f90ae7",  /* dash misplaced */
		"7c9e6679-7425-40de-944b-e07fc1f90aeg",  /* not hex */
		"{7c9e6679-7425-40de-944b-e07fc1f90ae}",
		"",
	};
	uint8_t id[UUID_BYTES];
	(void)state;

	memset(id, 0xab, sizeof(id));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(uuid_parse(bad[i], strlen(bad[i]), id), ERR_INVALID);
	for (size_t b = 0; b < UUID_BYTES; b++)
		assert_int_equal(id[b], 0xab); /* untouched on failure */
}

static void test_v4(void **state)
{
	uint8_t a[UUID_BYTES], b[UUID_BYTES];
	(void)state;

	assert_int_equal(uuid_new_v4(a), 0);
	assert_int_equal(uuid_new_v4(b), 0);
	assert_int_equal(a[6] >> 4, 4);
	assert_int_equal(a[8] >> 6, 2);
	assert_false(uuid_is_nil(a));
	assert_memory_not_equal(a, b, UUID_BYTES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_format),
		cmocka_unit_test(test_parse_refuses),
		cmocka_unit_test(test_v4),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
