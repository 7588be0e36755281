/* SPDX-License-Identifier: GPL-2.0 */
/* The two magic values of the profiler's window markers (insn_profile.c). */
#ifndef RPCRDMA_PROFILE_MARK_H
#define RPCRDMA_PROFILE_MARK_H
#define PROFILE_MARK_OPEN  0x4F505352u	/* "RSPO" */
#define PROFILE_MARK_CLOSE 0x43505352u	/* "RSPC" */
#endif
