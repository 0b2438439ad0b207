/* test_s3xml.c - ListObjectsV2 pages and element text: valid, capped, truncated, corrupt. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "objstore/objstore_int.h"

static const char PAGE[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
	"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<Name>b</Name><Prefix>blocks/</Prefix><MaxKeys>2</MaxKeys>"
	"<IsTruncated>true</IsTruncated>"
	"<Contents><Key>blocks/a&amp;b&lt;&#x41;&#66;</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>"
	"<ETag>&quot;abc&quot;</ETag><Size>123</Size><StorageClass>STANDARD</StorageClass>"
	"<Owner><ID>u</ID><DisplayName>u</DisplayName></Owner></Contents>"
	"<Contents><Key>blocks/z</Key><Size>0</Size></Contents>"
	"<KeyCount>2</KeyCount><NextContinuationToken>tok/1+=</NextContinuationToken>"
	"</ListBucketResult>";

static int parse(const char *xml, struct objstore__list_page *p)
{
	struct err_msg msg = {""};

	return objstore__parse_list(xml, strlen(xml), p, &msg);
}

static void page(void **state)
{
	struct objstore__list_page p;

	(void)state;
	assert_int_equal(parse(PAGE, &p), 0);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.entries[0].key, "blocks/a&b<AB");
	assert_int_equal(p.entries[0].size, 123);
	assert_string_equal(p.entries[1].key, "blocks/z");
	assert_int_equal(p.entries[1].size, 0);
	assert_true(p.truncated);
	assert_string_equal(p.next_token, "tok/1+=");
	objstore__list_page_release(&p);

	assert_int_equal(parse("<ListBucketResult><IsTruncated>false</IsTruncated>"
			       "<KeyCount>0</KeyCount></ListBucketResult>", &p), 0);
	assert_int_equal(p.n, 0);
	assert_false(p.truncated);
	objstore__list_page_release(&p);
}

static void corrupt(void **state)
{
	struct objstore__list_page p;
	static const char *bad[] = {
		"",
		"<Error><Code>AccessDenied</Code></Error>",
		"<ListBucketResult><IsTruncated>maybe</IsTruncated></ListBucketResult>",
		"<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a</Key><Size>99999999999999999999999</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key></Key><Size>1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a&bogus;</Key><Size>1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a&#0;</Key><Size>1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a&#x110000;</Key><Size>1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a</Key><Size>1</Size>",
		"<ListBucketResult><Contents><Key>a",
		"<ListBucketResult",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&p, 0x5a, sizeof(p));
		assert_int_not_equal(parse(bad[i], &p), 0);
	}
	/* Every prefix of a valid page is rejected or parsed, never overrun (ASan). */
	for (size_t n = 0; n < strlen(PAGE); n++) {
		char *cut = malloc(n ? n : 1);
		struct err_msg msg = {""};

		memcpy(cut, PAGE, n);
		if (!objstore__parse_list(cut, n, &p, &msg))
			objstore__list_page_release(&p);
		free(cut);
	}
}

static void caps(void **state)
{
	struct objstore__list_page p;
	struct buf b;
	char key[OBJSTORE_KEY_MAX + 2];

	(void)state;
	/* One key more than a page may hold. */
	buf_init(&b, 1u << 20);
	buf_puts(&b, "<ListBucketResult>");
	for (int i = 0; i <= OBJSTORE__LIST_MAX_KEYS; i++)
		buf_printf(&b, "<Contents><Key>k%d</Key><Size>1</Size></Contents>", i);
	buf_puts(&b, "</ListBucketResult>");
	assert_int_equal(parse(b.data, &p), ERR_TOO_LARGE);
	buf_release(&b);
	/* A key longer than S3 allows. */
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	buf_init(&b, 1u << 20);
	buf_printf(&b, "<ListBucketResult><Contents><Key>%s</Key><Size>1</Size></Contents></ListBucketResult>", key);
	assert_int_equal(parse(b.data, &p), ERR_CORRUPT);
	buf_release(&b);
	/* A token longer than the cap. */
	buf_init(&b, 1u << 20);
	buf_puts(&b, "<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>");
	for (int i = 0; i <= OBJSTORE__TOKEN_MAX; i++)
		buf_putc(&b, 't');
	buf_puts(&b, "</NextContinuationToken></ListBucketResult>");
	assert_int_equal(parse(b.data, &p), ERR_CORRUPT);
	buf_release(&b);
	/* A body over the page cap is refused before it is scanned. */
	{
		struct err_msg msg = {""};

		assert_int_equal(objstore__parse_list(PAGE, OBJSTORE__XML_MAX + 1, &p, &msg),
				 ERR_TOO_LARGE);
	}
}

static void text(void **state)
{
	const char *err = "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code>"
			  "<Message>a &quot;b&quot;</Message><Empty/></Error>";
	char out[64];

	(void)state;
	assert_int_equal(objstore__xml_text(err, strlen(err), "Code", out, sizeof(out)), 0);
	assert_string_equal(out, "SignatureDoesNotMatch");
	assert_int_equal(objstore__xml_text(err, strlen(err), "Message", out, sizeof(out)), 0);
	assert_string_equal(out, "a \"b\"");
	assert_int_equal(objstore__xml_text(err, strlen(err), "Empty", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(objstore__xml_text(err, strlen(err), "UploadId", out, sizeof(out)),
			 ERR_NOT_FOUND);
	assert_int_equal(objstore__xml_text(err, strlen(err), "Code", out, 5), ERR_CORRUPT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(page), cmocka_unit_test(corrupt), cmocka_unit_test(caps),
		cmocka_unit_test(text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
