/* Module store: the layout must be exactly what perf's own build-id cache produces
 * (perf buildid-cache --add is the oracle), each build-id stored once, stale files
 * refused, and the vdso dump carrying the build-id readelf sees in it. */
#include "xp_test.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session/ms_store.h"

static int run_cmd(const char *cmd, char *out, size_t outsz)
{
	FILE *p = popen(cmd, "r");
	size_t n;

	if (!p)
		return -1;
	n = fread(out, 1, outsz - 1, p);
	out[n] = 0;
	while (n && out[n - 1] == '\n')
		out[--n] = 0;
	return pclose(p);
}

/* Build-id as readelf prints it: the independent reading. */
static void readelf_build_id(const char *path, char *hex, size_t n)
{
	char cmd[PATH_MAX + 100];

	snprintf(cmd, sizeof(cmd),
		 "readelf -n '%s' | sed -n 's/.*Build ID: *\\([0-9a-f]*\\).*/\\1/p' | head -1", path);
	assert_int_equal(run_cmd(cmd, hex, n), 0);
	assert_true(strlen(hex) == 40);
}

static void test_layout_matches_perf(void **state)
{
	const char *bin = XP_BUILDDIR "/tests/test_ms_store";
	char dir[1024], hex[64], ours[PATH_MAX], link[PATH_MAX + 64], cmd[PATH_MAX + 1200];
	char theirs[PATH_MAX], real[PATH_MAX];
	struct ms_store *s;
	uint8_t bid[MS_BUILD_ID_MAX];
	size_t bsz;
	const char *name;
	const uint8_t *eb;
	struct stat a, b;
	ssize_t n;

	(void)state;
	assert_non_null(realpath(bin, real));
	readelf_build_id(real, hex, sizeof(hex));
	assert_int_equal(ms_build_id_file(real, bid, &bsz), 0);
	assert_int_equal(bsz, 20);
	ms_hex(ours, bid, bsz);
	assert_string_equal(ours, hex);

	snprintf(dir, sizeof(dir), "%s/trace", xp_test_tmp());
	assert_int_equal(ms_store_open(&s, dir), 0);
	assert_int_equal(ms_store_add_file(s, real, NULL, bid, bsz), 1);
	assert_int_equal(ms_store_add_file(s, real, NULL, bid, bsz), 0);	/* once */
	assert_int_equal(ms_store_add_file(s, real, NULL, NULL, 0), 0);
	assert_int_equal(ms_store_count(s), 1);
	assert_int_equal(ms_store_entry(s, 0, &name, &eb, &bsz), 0);
	assert_string_equal(name, real);
	assert_memory_equal(eb, bid, 20);

	snprintf(link, sizeof(link), "%s/.build-id/%.2s/%s", dir, hex, hex + 2);
	n = readlink(link, ours, sizeof(ours) - 1);
	assert_true(n > 0);
	ours[n] = 0;
	/* The snapshot is the same bytes as the original. */
	strcat(link, "/elf");
	assert_int_equal(stat(link, &a), 0);
	assert_int_equal(stat(real, &b), 0);
	assert_int_equal(a.st_size, b.st_size);

	if (system("perf version >/dev/null 2>&1") != 0) {
		ms_store_close(s);
		skip();
	}
	snprintf(cmd, sizeof(cmd), "perf --buildid-dir %s/perfcache buildid-cache --add '%s' 2>&1",
		 xp_test_tmp(), real);
	assert_int_equal(run_cmd(cmd, theirs, sizeof(theirs)), 0);
	snprintf(link, sizeof(link), "%s/perfcache/.build-id/%.2s/%s", xp_test_tmp(), hex, hex + 2);
	n = readlink(link, theirs, sizeof(theirs) - 1);
	assert_true(n > 0);
	theirs[n] = 0;
	assert_string_equal(ours, theirs);
	ms_store_close(s);
}

static void test_stale_and_bad_names(void **state)
{
	char dir[1024];
	struct ms_store *s;
	uint8_t bid[MS_BUILD_ID_MAX] = { 1, 2, 3 };
	const char *bin = XP_BUILDDIR "/tests/test_ms_store";
	char real[PATH_MAX];

	(void)state;
	assert_non_null(realpath(bin, real));
	snprintf(dir, sizeof(dir), "%s/t2", xp_test_tmp());
	assert_int_equal(ms_store_open(&s, dir), 0);
	assert_int_equal(ms_store_add_file(s, real, NULL, bid, 20), -ESTALE);
	assert_int_equal(ms_store_add_file(s, "relative/x", real, NULL, 0), -EINVAL);
	assert_int_equal(ms_store_add_file(s, "/a/../../etc/x", real, NULL, 0), -EINVAL);
	assert_int_equal(ms_store_add_file(s, "/no/such/file", NULL, NULL, 0), -ENOENT);
	assert_int_equal(ms_store_add_file(s, "/no/such/file", "/proc/1/map_files/0-1", NULL, 0), -ENOENT);
	assert_int_equal(ms_store_count(s), 0);
	/* A snapshot from another path (a /proc/PID/map_files link in real use) under the
	 * mapping's name, with " (deleted)" dropped. */
	assert_int_equal(ms_store_add_file(s, "/gone/prog (deleted)", real, NULL, 0), 1);
	{
		const char *name;
		const uint8_t *eb;
		size_t bsz;
		char hex[41], p[PATH_MAX];
		struct stat st;
		assert_int_equal(ms_store_entry(s, 0, &name, &eb, &bsz), 0);
		assert_string_equal(name, "/gone/prog");
		ms_hex(hex, eb, bsz);
		snprintf(p, sizeof(p), "%s/gone/prog/%s/elf", dir, hex);
		assert_int_equal(stat(p, &st), 0);
	}
	ms_store_close(s);
}

/* The map_files entry of a process that exited between the check and the open (issue
 * 27, item 16: `record --adaptive -- true` said "no snapshot of /usr/bin/true" now and
 * then): the file is read by its name, its build-id checked. */
static void test_src_gone(void **state)
{
	const char *bin = XP_BUILDDIR "/tests/test_ms_store";
	char dir[1024], real[PATH_MAX];
	struct ms_store *s;
	uint8_t bid[MS_BUILD_ID_MAX], other[MS_BUILD_ID_MAX] = { 1, 2, 3 };
	size_t bsz;
	pid_t pid = fork();

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);	/* gone: its map_files with it */
	assert_non_null(realpath(bin, real));
	assert_int_equal(ms_build_id_file(real, bid, &bsz), 0);
	snprintf(dir, sizeof(dir), "%s/t3", xp_test_tmp());
	assert_int_equal(ms_store_open(&s, dir), 0);
	char src[128];
	snprintf(src, sizeof(src), "/proc/%d/map_files/400000-401000", (int)pid);
	assert_int_equal(ms_store_add_file(s, real, src, other, 20), -ESTALE);
	assert_int_equal(ms_store_add_file(s, real, src, bid, bsz), 1);
	assert_int_equal(ms_store_count(s), 1);
	ms_store_close(s);
}

static void test_vdso(void **state)
{
	char dir[1024], hex[64], path[PATH_MAX], link[PATH_MAX], want[PATH_MAX];
	struct ms_store *s;
	const void *img;
	size_t size, bsz;
	const char *name;
	const uint8_t *eb;
	ssize_t n;

	(void)state;
	if (ms_vdso_self(&img, &size) < 0)
		skip();
	assert_true(size >= 4096);
	assert_memory_equal(img, "\177ELF", 4);
	snprintf(dir, sizeof(dir), "%s/t3", xp_test_tmp());
	assert_int_equal(ms_store_open(&s, dir), 0);
	assert_int_equal(ms_store_add_vdso(s), 1);
	assert_int_equal(ms_store_add_vdso(s), 0);
	assert_int_equal(ms_store_entry(s, 0, &name, &eb, &bsz), 0);
	assert_string_equal(name, "[vdso]");
	ms_hex(hex, eb, bsz);
	snprintf(path, sizeof(path), "%s/[vdso]/%s/vdso", dir, hex);
	readelf_build_id(path, want, sizeof(want));
	assert_string_equal(hex, want);
	snprintf(link, sizeof(link), "%s/.build-id/%.2s/%s", dir, hex, hex + 2);
	n = readlink(link, path, sizeof(path) - 1);
	assert_true(n > 0);
	path[n] = 0;
	snprintf(want, sizeof(want), "../../[vdso]/%s", hex);
	assert_string_equal(path, want);
	ms_store_close(s);
}

/* A file that cannot be hardlinked (memfd: another filesystem) is copied at flush
 * time in deferred mode, from the descriptor opened at add time: closing (deleting)
 * the original in between does not matter. */
static void test_deferred_copy(void **state)
{
	const char *bin = XP_BUILDDIR "/tests/test_ms_store";
	char dir[1024], src[64], hex[41], path[PATH_MAX], cmd[PATH_MAX * 2];
	struct ms_store *s;
	const char *name;
	const uint8_t *eb;
	size_t bsz;
	struct stat st, orig;
	int mfd, in;
	char buf[65536];
	ssize_t n;

	(void)state;
	mfd = memfd_create("xp-elf", 0);
	assert_true(mfd >= 0);
	in = open(bin, O_RDONLY);
	assert_true(in >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(mfd, buf, (size_t)n), n);
	close(in);
	assert_int_equal(fstat(mfd, &orig), 0);
	snprintf(src, sizeof(src), "/proc/self/fd/%d", mfd);

	snprintf(dir, sizeof(dir), "%s/t4", xp_test_tmp());
	assert_int_equal(ms_store_open(&s, dir), 0);
	ms_store_defer_copies(s, 1);
	assert_int_equal(ms_store_add_file(s, "/opt/app/prog", src, NULL, 0), 1);
	assert_int_equal(ms_store_entry(s, 0, &name, &eb, &bsz), 0);
	ms_hex(hex, eb, bsz);
	snprintf(path, sizeof(path), "%s/opt/app/prog/%s/elf", dir, hex);
	assert_int_equal(stat(path, &st), -1);	/* not copied yet */
	assert_int_equal(ms_store_bytes_copied(s), 0);
	close(mfd);				/* the original is gone */
	assert_int_equal(ms_store_flush(s), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, orig.st_size);
	assert_int_equal(ms_store_bytes_copied(s), (uint64_t)orig.st_size);
	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", bin, path);
	assert_int_equal(system(cmd), 0);
	ms_store_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_matches_perf),
		cmocka_unit_test(test_stale_and_bad_names),
		cmocka_unit_test(test_src_gone),
		cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_deferred_copy),
	};
	return cmocka_run_group_tests(tests, xp_test_tmp_setup, xp_test_tmp_teardown);
}
