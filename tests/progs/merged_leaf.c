/* merged.c as compilers build it: X, a leaf needing no stack, gets no frame of its own
 * (-O1 -fno-omit-frame-pointer), so frame-pointer callchains of its samples skip A. */
#define MERGED_FRAMELESS_LEAF
#include "merged.c"
