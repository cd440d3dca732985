/* The JSON string writer: escapes, UTF-8 kept or replaced, no length limit; and the
 * object writer's keys and values. */
#include "xp_test.h"

#include "output/out.h"

/* s as out_json_str writes it, in a buffer the next call reuses. */
static const char *js(const char *s)
{
	static struct out_buf b;
	b.len = 0;
	out_json_str(&b, s);
	out_buf_put(&b, "", 1);
	assert_false(b.oom);
	return b.p;
}

static void test_plain(void **state)
{
	(void)state;
	assert_string_equal(js(""), "\"\"");
	assert_string_equal(js("main"), "\"main\"");
	assert_string_equal(js("std::vector<int>::push_back(int const&) [clone .cold]"),
			    "\"std::vector<int>::push_back(int const&) [clone .cold]\"");
	assert_string_equal(js(NULL), "null");
}

static void test_quotes(void **state)
{
	(void)state;
	assert_string_equal(js("a\"b"), "\"a\\\"b\"");
	assert_string_equal(js("a\\b"), "\"a\\\\b\"");
	assert_string_equal(js("\"\\\""), "\"\\\"\\\\\\\"\"");
	assert_string_equal(js("/'"), "\"/'\"");
}

static void test_controls(void **state)
{
	(void)state;
	assert_string_equal(js("\n\t\r\b\f"), "\"\\n\\t\\r\\b\\f\"");
	assert_string_equal(js("\x01\x02\x1f"), "\"\\u0001\\u0002\\u001f\"");
	assert_string_equal(js("\x0b\x1b[31m"), "\"\\u000b\\u001b[31m\"");
	assert_string_equal(js("a\x7f" "b"), "\"a\\u007fb\"");
	/* every control character, one by one */
	for (int c = 1; c < 0x20; c++) {
		char in[2] = { (char)c, 0 }, want[16];
		const char *named = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" :
				    c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
		if (named)
			snprintf(want, sizeof(want), "\"%s\"", named);
		else
			snprintf(want, sizeof(want), "\"\\u%04x\"", c);
		assert_string_equal(js(in), want);
	}
}

static void test_utf8_valid(void **state)
{
	(void)state;
	/* 2, 3 and 4 bytes, the edges of each range kept as they are */
	assert_string_equal(js("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
	assert_string_equal(js("\xc2\x80\xdf\xbf"), "\"\xc2\x80\xdf\xbf\"");
	assert_string_equal(js("\xe2\x82\xac \xe0\xa0\x80 \xed\x9f\xbf \xef\xbf\xbf"),
			    "\"\xe2\x82\xac \xe0\xa0\x80 \xed\x9f\xbf \xef\xbf\xbf\"");
	assert_string_equal(js("\xf0\x9f\x98\x80 \xf0\x90\x80\x80 \xf4\x8f\xbf\xbf"),
			    "\"\xf0\x9f\x98\x80 \xf0\x90\x80\x80 \xf4\x8f\xbf\xbf\"");
}

static void test_utf8_invalid(void **state)
{
	(void)state;
	/* lone continuation bytes and impossible leads: one U+FFFD each */
	assert_string_equal(js("a\x80" "b"), "\"a\\ufffdb\"");
	assert_string_equal(js("\x80\xbf"), "\"\\ufffd\\ufffd\"");
	assert_string_equal(js("\xfe\xff\xf5"), "\"\\ufffd\\ufffd\\ufffd\"");
	/* overlong forms */
	assert_string_equal(js("\xc0\xaf"), "\"\\ufffd\\ufffd\"");
	assert_string_equal(js("\xc1\xbf"), "\"\\ufffd\\ufffd\"");
	assert_string_equal(js("\xe0\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\"");
	assert_string_equal(js("\xf0\x80\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	/* surrogates and beyond U+10FFFF */
	assert_string_equal(js("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
	assert_string_equal(js("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	/* truncated sequences: the maximal valid prefix is one U+FFFD, what follows stays */
	assert_string_equal(js("\xc3"), "\"\\ufffd\"");
	assert_string_equal(js("\xe2\x82"), "\"\\ufffd\"");
	assert_string_equal(js("\xe2\x82x"), "\"\\ufffdx\"");
	assert_string_equal(js("\xf0\x9f\x98\""), "\"\\ufffd\\\"\"");
	assert_string_equal(js("\xf0\x9f\x98\xc3\xa9"), "\"\\ufffd\xc3\xa9\"");
}

static void test_long(void **state)
{
	(void)state;
	size_t n = 100 * 1024;
	char *in = malloc(n + 1), *want = malloc(2 * n + 3);

	/* ordinary characters with a quote every 100 bytes: nothing cut */
	for (size_t i = 0; i < n; i++)
		in[i] = i % 100 == 99 ? '"' : (char)('a' + i % 26);
	in[n] = 0;
	size_t k = 0;
	want[k++] = '"';
	for (size_t i = 0; i < n; i++) {
		if (in[i] == '"')
			want[k++] = '\\';
		want[k++] = in[i];
	}
	want[k++] = '"';
	want[k] = 0;
	const char *got = js(in);
	assert_int_equal(strlen(got), n + n / 100 + 2);
	assert_string_equal(got, want);
	free(in);
	free(want);
}

static void test_object(void **state)
{
	(void)state;
	char mem[8];	/* too small: the buffer moves to the heap */
	struct out_buf b;

	out_buf_init(&b, mem, sizeof(mem));
	out_json_begin(&b);
	out_json_hex(&b, "Start", 0x401000);
	out_json_u64(&b, "count", 18446744073709551615ULL);
	out_json_fixed(&b, "ipc", 3, 1.23456);
	out_json_bool(&b, "cycles approx", true);
	out_json_null(&b, "taken");
	out_json_string(&b, "sym", "a\"b");
	out_json_string(&b, "none", NULL);
	out_json_end(&b);
	out_buf_put(&b, "", 1);
	assert_true(b.heap);
	assert_string_equal(b.p, "{\"start\":\"0x401000\",\"count\":18446744073709551615,"
				 "\"ipc\":1.235,\"cycles_approx\":true,\"taken\":null,"
				 "\"sym\":\"a\\\"b\",\"none\":null}\n");
	out_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_quotes),
		cmocka_unit_test(test_controls),
		cmocka_unit_test(test_utf8_valid),
		cmocka_unit_test(test_utf8_invalid),
		cmocka_unit_test(test_long),
		cmocka_unit_test(test_object),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
