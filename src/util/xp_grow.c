#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/xp_grow.h"

int xp_grow(void **p, size_t *cap, size_t need, size_t elem_size, size_t max_cap)
{
	size_t c = *cap ? *cap : 16;

	if (need <= *cap)
		return 0;
	if (need > max_cap || !elem_size)
		return -ENOMEM;
	while (c < need)
		c = c > SIZE_MAX / 2 ? SIZE_MAX : c * 2;
	if (c > max_cap)
		c = max_cap;
	if (c > SIZE_MAX / elem_size)
		return -ENOMEM;
	void *np = realloc(*p, c * elem_size);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = c;
	return 0;
}
