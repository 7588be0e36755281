/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C side of the Rust Send path: what Rust cannot reach directly (static
 * inlines, statement macros, tracepoints) and the layout table that proves
 * the generated bindings match the C compiler. Declared here for bindgen and
 * defined in svc_rdma_sendto_shim.c.
 */
#ifndef SVC_RDMA_SENDTO_SHIM_H
#define SVC_RDMA_SENDTO_SHIM_H

#include <linux/types.h>

/**
 * struct rs_layout_entry - one sizeof or offsetof as C sees it
 * @type: struct name, without "struct "
 * @field: field name, or "" for the size of @type
 * @value: the size or offset in bytes
 */
struct rs_layout_entry {
	const char *type;
	const char *field;
	size_t value;
};

extern const struct rs_layout_entry rs_layout_table[];
extern const unsigned int rs_layout_table_len;

#endif /* SVC_RDMA_SENDTO_SHIM_H */
