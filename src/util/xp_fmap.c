/* A file's bytes mapped without a uprobe's int3s (see xp_fmap.h). */
#include <sys/mman.h>

#include "util/xp_fmap.h"

const void *xp_fmap(int fd, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

void xp_funmap(const void *p, size_t size)
{
	if (p)
		munmap((void *)p, size);
}
