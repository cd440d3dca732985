/* PLT entry decoding (x86_plt.h). */
#include <string.h>

#include "arch/x86_64/x86_plt.h"

bool x86_plt_got_slot(const uint8_t *code, size_t n, uint64_t ip, uint64_t *slot)
{
	static const uint8_t endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	size_t p = 0;

	if (n >= sizeof(endbr64) && memcmp(code, endbr64, sizeof(endbr64)) == 0)
		p = sizeof(endbr64);
	if (p < n && code[p] == 0xf2)	/* bnd */
		p++;
	if (p + 6 > n || code[p] != 0xff || code[p + 1] != 0x25)
		return false;
	int32_t disp;
	memcpy(&disp, code + p + 2, sizeof(disp));
	*slot = ip + p + 6 + (uint64_t)(int64_t)disp;
	return true;
}
