/* A loop calling a leaf, 6 instructions per iteration, in assembly so PT made for it
 * by the tests and bench/decode-speed follows its exact control flow: spin(N) runs
 * 6N + 2 instructions. */
#include <stdlib.h>

long spin(long n);
__asm__(".text\n"
	".globl spin\n.type spin,@function\n"
	"spin:\n"
	"	xor %eax, %eax\n"
	".globl spin_loop\nspin_loop:\n"
	"	call leaf\n"
	".globl spin_after_call\nspin_after_call:\n"
	"	dec %rdi\n"
	"	jnz spin_loop\n"
	".globl spin_ret\nspin_ret:\n"
	"	ret\n"
	".size spin, .-spin\n"
	".globl leaf\n.type leaf,@function\n"
	"leaf:\n"
	"	add %rdi, %rax\n"
	"	xor $3, %rax\n"
	"	ret\n"
	".size leaf, .-leaf\n");

int main(int argc, char **argv)
{
	return (int)(spin(argc > 1 ? atol(argv[1]) : 1000) & 1);
}
