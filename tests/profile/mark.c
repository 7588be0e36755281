// SPDX-License-Identifier: GPL-2.0
/*
 * mark.c - "mark open" or "mark close": executes the instruction that opens
 * or closes an instruction-count window of the profiler plugin
 * (insn_profile.c), which recognises it by its bytes when QEMU translates
 * it. Static, no libc start-up beyond what the kernel needs to run it.
 */
#include <string.h>
#include "mark.h"

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "open"))
		__asm__ volatile("mov %0, %%eax" : : "i"(PROFILE_MARK_OPEN) : "eax");
	else if (argc == 2 && !strcmp(argv[1], "close"))
		__asm__ volatile("mov %0, %%eax" : : "i"(PROFILE_MARK_CLOSE) : "eax");
	else
		return 2;
	return 0;
}
