/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Headers bindgen reads for the Rust Send path (see gen_bindings.sh).
 * Module-private types come from the kernel tree's public sunrpc/rdma
 * headers; the shim header declares our C wrappers for static inlines and
 * macros, and the tracepoints' static keys and Rust entry points.
 */
#include <linux/sunrpc/svc_rdma.h>
#include <linux/sunrpc/svc_rdma_pcl.h>
#include <linux/sunrpc/rpc_rdma.h>
#include <rdma/ib_verbs.h>
#include "svc_rdma_sendto_shim.h"
