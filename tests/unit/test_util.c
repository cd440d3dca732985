#include <errno.h>
#include <stdint.h>

#include "xp_test.h"

#include "util/xp_grow.h"
#include "util/xp_hash.h"
#include "util/xp_map.h"
#include "util/xp_maps.h"

static void test_hash_bits(void **state)
{
	(void)state;
	assert_true(xp_hash_bits(0, 16) == 0);
	assert_true(xp_hash_bits(1, 16) == 0x9e37);
	assert_true(xp_hash_bits(1, 64) == XP_HASH_MUL);
	assert_true(xp_hash_bits(UINT64_MAX, 8) == ((0ULL - XP_HASH_MUL) >> 56));
	for (uint64_t x = 0; x < 1000; x++)
		assert_true(xp_hash_bits(x, 10) < 1024);
}

static void test_hash_str(void **state)
{
	(void)state;
	/* the published FNV-1a 64 values */
	assert_true(xp_hash_str(XP_HASH_STR_SEED, "") == 0xcbf29ce484222325ULL);
	assert_true(xp_hash_str(XP_HASH_STR_SEED, "a") == 0xaf63dc4c8601ec8cULL);
	assert_true(xp_hash_str(XP_HASH_STR_SEED, "foobar") == 0x85944171f73967e8ULL);
	assert_true(xp_hash_str(xp_hash_str(XP_HASH_STR_SEED, "foo"), "bar") == 0x85944171f73967e8ULL);
}

static void test_map_empty(void **state)
{
	struct xp_map m = { 0 };
	uint64_t v = 7, k;
	size_t it = 0;

	(void)state;
	assert_false(xp_map_get(&m, 0, &v));
	assert_false(xp_map_get(&m, 5, &v));
	assert_int_equal(v, 7);
	assert_int_equal(xp_map_count(&m), 0);
	assert_int_equal(xp_map_del(&m, 0), -ENOENT);
	assert_int_equal(xp_map_del(&m, 5), -ENOENT);
	assert_false(xp_map_next(&m, &it, &k, &v));
	xp_map_free(&m);
}

static void test_map_edge_keys(void **state)
{
	struct xp_map m = { 0 };
	uint64_t v;

	(void)state;
	assert_int_equal(xp_map_put(&m, 0, 10), 0);
	assert_int_equal(xp_map_put(&m, UINT64_MAX, 20), 0);
	assert_int_equal(xp_map_put(&m, 1, 30), 0);
	assert_int_equal(xp_map_count(&m), 3);
	assert_true(xp_map_get(&m, 0, &v));
	assert_int_equal(v, 10);
	assert_true(xp_map_get(&m, UINT64_MAX, &v));
	assert_int_equal(v, 20);
	assert_true(xp_map_get(&m, 1, NULL));
	assert_false(xp_map_get(&m, 2, NULL));
	assert_int_equal(xp_map_put(&m, 0, UINT64_MAX), 0);	/* replaces */
	assert_int_equal(xp_map_count(&m), 3);
	assert_true(xp_map_get(&m, 0, &v));
	assert_true(v == UINT64_MAX);
	assert_int_equal(xp_map_del(&m, 0), 0);
	assert_false(xp_map_get(&m, 0, NULL));
	assert_int_equal(xp_map_del(&m, 0), -ENOENT);
	assert_int_equal(xp_map_del(&m, UINT64_MAX), 0);
	assert_int_equal(xp_map_count(&m), 1);
	assert_true(xp_map_get(&m, 1, &v));
	assert_int_equal(v, 30);
	xp_map_free(&m);
	assert_int_equal(xp_map_count(&m), 0);
	assert_false(xp_map_get(&m, 1, NULL));
}

/* Many keys: sequential, spread over all bits, and keys that collide (same top bits
 * of the product, so one probe run) with deletions in the middle of runs. */
static uint64_t key_of(size_t i)
{
	switch (i % 3) {
	case 0: return i;
	case 1: return UINT64_MAX - i;
	default: return (uint64_t)i << 40 | i;
	}
}

static void test_map_many(void **state)
{
	enum { N = 20000 };
	struct xp_map m = { 0 };
	uint64_t v, k;

	(void)state;
	for (size_t i = 0; i < N; i++) {
		assert_int_equal(xp_map_put(&m, key_of(i), i * 7), 0);
		assert_int_equal(xp_map_count(&m), i + 1);
	}
	assert_true(m.cap >= 2 * N && (m.cap & (m.cap - 1)) == 0);
	for (size_t i = 0; i < N; i++) {
		assert_true(xp_map_get(&m, key_of(i), &v));
		assert_true(v == i * 7);
	}
	for (size_t i = 0; i < N; i += 2)
		assert_int_equal(xp_map_del(&m, key_of(i)), 0);
	assert_int_equal(xp_map_count(&m), N / 2);
	for (size_t i = 0; i < N; i++)
		assert_true(xp_map_get(&m, key_of(i), &v) == (i % 2 == 1) && (i % 2 == 0 || v == i * 7));
	/* the walk sees each remaining key once */
	size_t it = 0, seen = 0;
	uint64_t sum = 0;
	while (xp_map_next(&m, &it, &k, &v)) {
		assert_true(xp_map_get(&m, k, NULL));
		seen++;
		sum += v;
	}
	assert_int_equal(seen, N / 2);
	uint64_t want = 0;
	for (size_t i = 1; i < N; i += 2)
		want += i * 7;
	assert_true(sum == want);
	xp_map_free(&m);
}

static void test_map_collisions(void **state)
{
	struct xp_map m = { 0 };
	uint64_t keys[64], v;
	size_t nk = 0;

	(void)state;
	/* keys whose home slot is 0 in the first table (16 slots) */
	for (uint64_t x = 1; nk < 64; x++)
		if (xp_hash_bits(x, 4) == 0)
			keys[nk++] = x;
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(xp_map_put(&m, keys[i], i), 0);
	assert_int_equal(m.cap, 16);
	/* deleting from the front of the run keeps the rest reachable */
	assert_int_equal(xp_map_del(&m, keys[0]), 0);
	assert_int_equal(xp_map_del(&m, keys[3]), 0);
	for (size_t i = 0; i < 6; i++)
		assert_true(xp_map_get(&m, keys[i], &v) == (i != 0 && i != 3) && (i == 0 || i == 3 || v == i));
	for (size_t i = 6; i < 64; i++)
		assert_int_equal(xp_map_put(&m, keys[i], i), 0);
	for (size_t i = 0; i < 64; i++)
		assert_true(xp_map_get(&m, keys[i], NULL) == (i != 0 && i != 3));
	xp_map_free(&m);
}

/* A copy holds the same entries (key 0 included) and is independent of the original. */
static void test_map_copy(void **state)
{
	struct xp_map a = { 0 }, b;
	uint64_t v;

	(void)state;
	assert_int_equal(xp_map_copy(&b, &a), 0);
	assert_int_equal(xp_map_count(&b), 0);
	for (uint64_t k = 0; k < 1000; k++)
		assert_int_equal(xp_map_put(&a, k * 7919, k + 1), 0);
	assert_int_equal(xp_map_copy(&b, &a), 0);
	assert_int_equal(xp_map_count(&b), 1000);
	for (uint64_t k = 0; k < 1000; k++) {
		assert_true(xp_map_get(&b, k * 7919, &v));
		assert_int_equal(v, k + 1);
	}
	assert_int_equal(xp_map_put(&b, 5, 55), 0);
	assert_int_equal(xp_map_del(&b, 0), 0);
	assert_false(xp_map_get(&a, 5, NULL));
	assert_true(xp_map_get(&a, 0, &v));
	assert_int_equal(v, 1);
	assert_int_equal(xp_map_count(&a), 1000);
	xp_map_free(&a);
	xp_map_free(&b);
}

static void test_grow(void **state)
{
	int *a = NULL;
	size_t cap = 0;

	(void)state;
	assert_int_equal(xp_grow((void **)&a, &cap, 0, sizeof(*a), SIZE_MAX), 0);
	assert_null(a);
	assert_int_equal(cap, 0);
	assert_int_equal(xp_grow((void **)&a, &cap, 1, sizeof(*a), SIZE_MAX), 0);
	assert_int_equal(cap, 16);
	int *was = a;
	assert_int_equal(xp_grow((void **)&a, &cap, 16, sizeof(*a), SIZE_MAX), 0);
	assert_ptr_equal(a, was);
	assert_int_equal(xp_grow((void **)&a, &cap, 17, sizeof(*a), SIZE_MAX), 0);
	assert_int_equal(cap, 32);
	assert_int_equal(xp_grow((void **)&a, &cap, 100, sizeof(*a), SIZE_MAX), 0);
	assert_int_equal(cap, 128);
	a[127] = 5;
	/* a capacity limit clamps the doubling, and needs past it fail */
	assert_int_equal(xp_grow((void **)&a, &cap, 129, sizeof(*a), 200), 0);
	assert_int_equal(cap, 200);
	assert_int_equal(a[127], 5);
	was = a;
	assert_int_equal(xp_grow((void **)&a, &cap, 201, sizeof(*a), 200), -ENOMEM);
	assert_ptr_equal(a, was);
	assert_int_equal(cap, 200);
	/* byte counts that overflow size_t fail, leaving the array alone */
	assert_int_equal(xp_grow((void **)&a, &cap, SIZE_MAX / 2, sizeof(*a), SIZE_MAX), -ENOMEM);
	assert_int_equal(xp_grow((void **)&a, &cap, SIZE_MAX, sizeof(*a), SIZE_MAX), -ENOMEM);
	assert_ptr_equal(a, was);
	assert_int_equal(cap, 200);
	free(a);
}

static void test_grow_macro(void **state)
{
	struct { uint8_t *v; uint8_t cap; } s = { NULL, 0 };
	struct { long *v; int cap; } t = { NULL, 0 };

	(void)state;
	assert_true(XP_INT_MAX(s.cap) == 255);
	assert_true(XP_INT_MAX(t.cap) == INT32_MAX);
	assert_int_equal(XP_GROW(s.v, s.cap, 100), 0);
	assert_int_equal(s.cap, 128);
	assert_int_equal(XP_GROW(s.v, s.cap, 129), 0);
	assert_int_equal(s.cap, 255);	/* clamped to what the capacity's type holds */
	assert_int_equal(XP_GROW(s.v, s.cap, 256), -ENOMEM);
	assert_int_equal(s.cap, 255);
	assert_int_equal(XP_GROW(t.v, t.cap, 1000), 0);
	assert_int_equal(t.cap, 1024);
	t.v[1023] = -1;
	free(s.v);
	free(t.v);
}

/* Lines as the kernel writes them (show_map_vma: the path after padding to a column). */
static void test_maps_parse(void **state)
{
	struct xp_maps_line m;
	char l1[] = "5555d9a6c000-5555d9a6e000 r-xp 00002000 fd:01 1835019                    "
		    "/home/u/my dir/a b.so\n";
	char l2[] = "7f1c2a400000-7f1c2a600000 rw-s 00000000 00:05 3271                       "
		    "/memfd:jit (deleted)\n";
	char l3[] = "7ffd6b7e1000-7ffd6b7e3000 r-xp 00000000 00:00 0                          [vdso]";
	char l4[] = "7f1c2a300000-7f1c2a400000 rw-p 00000000 00:00 0 \n";
	char l5[] = "7f1c2a300000-7f1c2a400000 r--p fffffffffffff000 103:1f 18446744073709551615 /x";
	char l6[] = "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]";

	(void)state;
	assert_int_equal(xp_maps_parse(l1, &m), 0);
	assert_true(m.start == 0x5555d9a6c000ull && m.end == 0x5555d9a6e000ull && m.pgoff == 0x2000);
	assert_string_equal(m.perms, "r-xp");
	assert_int_equal(m.major, 0xfd);
	assert_int_equal(m.minor, 1);
	assert_true(m.inode == 1835019);
	assert_string_equal(m.path, "/home/u/my dir/a b.so");
	assert_int_equal(xp_maps_parse(l2, &m), 0);
	assert_string_equal(m.perms, "rw-s");
	assert_string_equal(m.path, "/memfd:jit (deleted)");
	assert_int_equal(xp_maps_parse(l3, &m), 0);
	assert_string_equal(m.path, "[vdso]");
	assert_true(m.end - m.start == 0x2000);
	assert_int_equal(xp_maps_parse(l4, &m), 0);
	assert_string_equal(m.path, "");
	assert_int_equal(m.inode, 0);
	assert_int_equal(xp_maps_parse(l5, &m), 0);
	assert_true(m.pgoff == 0xfffffffffffff000ull && m.inode == UINT64_MAX);
	assert_int_equal(m.major, 0x103);
	assert_int_equal(m.minor, 0x1f);
	assert_string_equal(m.path, "/x");
	assert_int_equal(xp_maps_parse(l6, &m), 0);
	assert_true(m.start == 0xffffffffff600000ull);
	assert_string_equal(m.perms, "--xp");
}

static void test_maps_malformed(void **state)
{
	static const char *const bad[] = {
		"",
		"\n",
		"garbage",
		"1000-2000",
		"1000-2000 r-xp",
		"1000-2000 r-xp 0 fd:01",
		"1000 2000 r-xp 0 fd:01 5 /x",
		"2000-1000 r-xp 0 fd:01 5 /x",				/* end before start */
		"1000-2000 r-x 0 fd:01 5 /x",				/* three permissions */
		"1000-2000 r-xpp 0 fd:01 5 /x",
		"1000-2000 r-xp -1 fd:01 5 /x",				/* a sign */
		"1000-2000 r-xp 0x10 fd:01 5 /x",
		"1000-2000 r-xp 0 fd01 5 /x",
		"1000-2000 r-xp 0 fd:01 5x /x",
		"1000-2000 r-xp 0 fd:01 -5 /x",
		"1000-2000 r-xp 10000000000000000 fd:01 5 /x",		/* past 64 bits */
		"1000-2000 r-xp 0 fd:01 18446744073709551616 /x",
		"10000000000000000-10000000000000001 r-xp 0 fd:01 5 /x",
		"1000-2000 r-xp 0 1000:01 5 /x",			/* major past 12 bits */
		" 1000-2000 r-xp 0 fd:01 5 /x",
	};
	struct xp_maps_line m;
	char buf[128];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", bad[i]);
		if (xp_maps_parse(buf, &m) != -EINVAL)
			fail_msg("accepted: \"%s\"", bad[i]);
	}
}

/* This process: the mapping holding this function is executable, the vdso is there. */
static void test_maps_self(void **state)
{
	struct xp_maps it;
	struct xp_maps_line m;
	uintptr_t fn = (uintptr_t)test_maps_self;
	int code = 0, vdso = 0, n = 0;
	uint64_t last = 0;

	(void)state;
	assert_int_equal(xp_maps_open(&it, 0), 0);
	while (xp_maps_next(&it, &m)) {
		n++;
		assert_true(m.start >= last);	/* address order */
		last = m.end;
		code += fn >= m.start && fn < m.end && m.perms[2] == 'x' && m.path[0] == '/';
		vdso += strcmp(m.path, "[vdso]") == 0;
	}
	xp_maps_close(&it);
	assert_true(n > 5);
	assert_int_equal(code, 1);
	assert_int_equal(vdso, 1);
	assert_int_equal(xp_maps_open(&it, 999999999), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_bits),
		cmocka_unit_test(test_hash_str),
		cmocka_unit_test(test_map_empty),
		cmocka_unit_test(test_map_edge_keys),
		cmocka_unit_test(test_map_many),
		cmocka_unit_test(test_map_collisions),
		cmocka_unit_test(test_map_copy),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_grow_macro),
		cmocka_unit_test(test_maps_parse),
		cmocka_unit_test(test_maps_malformed),
		cmocka_unit_test(test_maps_self),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
