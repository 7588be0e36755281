// SPDX-License-Identifier: GPL-2.0
/*
 * C shim of the Rust Send path, see svc_rdma_sendto_shim.h.
 */
#include <linux/stddef.h>
#include <linux/build_bug.h>
#include <linux/sunrpc/svc_rdma.h>
#include <linux/sunrpc/svc_rdma_pcl.h>
#include <rdma/ib_verbs.h>

#include "svc_rdma_sendto_shim.h"

#define LAYOUT_SIZE(t)			{ #t, "", sizeof(struct t) },
#define LAYOUT_FIELD(t, f)		{ #t, #f, offsetof(struct t, f) },
#define LAYOUT_FIELD_AS(t, f, rust)	LAYOUT_FIELD(t, f)

const struct rs_layout_entry rs_layout_table[] = {
#include "bindings/layout_fields.h"
};
const unsigned int rs_layout_table_len = ARRAY_SIZE(rs_layout_table);
