/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C side of the Rust Send path: what Rust cannot reach directly (static
 * inlines, statement macros such as wait_event(), and the tracepoints'
 * out-of-line bodies, whose static-key tests are inline in Rust) and the
 * layout table that proves the generated bindings match the C compiler.
 * Declared here for bindgen, defined in svc_rdma_sendto_shim.c. Each
 * wrapper does what its name says and nothing more; the Send path's logic
 * is in Rust.
 */
#ifndef SVC_RDMA_SENDTO_SHIM_H
#define SVC_RDMA_SENDTO_SHIM_H

#include <linux/types.h>
#include <linux/spinlock_types.h>
#include <linux/tracepoint-defs.h>

struct svcxprt_rdma;
struct svc_rdma_send_ctxt;
struct svc_rqst;
struct rpc_rdma_cid;
struct ib_cq;
struct ib_wc;
struct ib_device;
struct ib_qp;
struct ib_send_wr;
struct page;
struct xdr_buf;
struct wait_queue_head;

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

/* Every send ctxt of the module, for the check at transport teardown */
extern struct list_head rs_send_ctxts_all;
extern spinlock_t rs_send_ctxts_all_lock;
void rs_list_del(struct list_head *entry);

/* Leak accounting kept by the Rust crate (stats.rs) */
s64 rs_stat_read(int which);

/* Transport state */
unsigned long rs_svc_serv_maxpages(const struct svcxprt_rdma *rdma);
void rs_send_cid_init(struct svcxprt_rdma *rdma, struct rpc_rdma_cid *cid);
void rs_xprt_set_data_and_enqueue(struct svcxprt_rdma *rdma);
bool rs_destroy_qp_and_quiesce_send_cq(struct svcxprt_rdma *rdma);
void rs_sq_starve_inc(void);
s64 rs_sq_starve_sum(void);
bool rs_task_asleep(struct task_struct *task);
void *rs_fake_parts_attach(struct svcxprt_rdma *rdma);
void rs_fake_parts_free(void *parts);
void *rs_kunit_suppress_warnings_begin(void);
int rs_kunit_suppress_warnings_end(void *handle);

/* Wait queues: wait_event() is a statement macro */
void rs_wait_sq(struct svcxprt_rdma *rdma, wait_queue_head_t *wq,
		const atomic_t *v, int target, bool exact);

/* Memory */
void rs_xdr_buf_init(struct xdr_buf *buf, void *start, size_t len);

void *rs_page_address(struct page *page);

/* Verbs: the ib_dma_* helpers handle devices without DMA (rxe, siw) */
#ifdef RPCRDMA_RS_OWN_HELPERS
/* The module's own copy of rust/helpers/rdma.c, error-injectable */
u64 rust_helper_ib_dma_map_page(struct ib_device *dev, struct page *page,
				unsigned long offset, size_t size,
				enum dma_data_direction direction);
u64 rust_helper_ib_dma_map_single(struct ib_device *dev, void *cpu_addr,
				  size_t size, enum dma_data_direction direction);
#endif
void rs_ib_dma_unmap_pages(struct ib_device *dev, const struct ib_sge *sges,
			   size_t n, u64 single);
/*
 * Fault-injection points of RPCRDMA_RS_FAULT_INJECTION=y builds; rs_fault()
 * and rs_ib_post_send_faulty() exist only in those.
 */
enum rs_fault_point {
	RS_FAULT_CTXT_GET,
	RS_FAULT_DMA_MAP,
	RS_FAULT_POST_FIRST,
	RS_FAULT_POST_MID,
	RS_FAULT_POST_MAPPED,
	RS_FAULT_POINTS
};

bool rs_fault(int point);
void rs_fault_teardown_pause(void);
int rs_ib_post_send_faulty(struct ib_qp *qp, const struct ib_sge *hdr,
			   const struct ib_send_wr *wr,
			   const struct ib_send_wr **bad_wr);
int rs_ib_post_send(struct ib_qp *qp, const struct ib_sge *hdr,
		    const struct ib_send_wr *wr, const struct ib_send_wr **bad_wr);

/*
 * Tracepoints, fired by the Rust crate at the points and with the fields of
 * the C file: it tests an event's static key (in __tracepoint_<event>) inline
 * and calls rust_do_trace_<event>() only when the event is enabled (see
 * src/abstractions/trace.rs). The events and their static keys are module.c's; the
 * functions are defined in the shim. Both are declared here for bindgen, as
 * <trace/events/rpcrdma.h> declares them, which the shim includes too, so
 * the C compiler checks that the two agree.
 */
#ifdef CONFIG_TRACEPOINTS
extern struct tracepoint __tracepoint_svcrdma_sq_full;
extern struct tracepoint __tracepoint_svcrdma_sq_retry;
extern struct tracepoint __tracepoint_svcrdma_sq_post_err;
extern struct tracepoint __tracepoint_svcrdma_wc_send;
extern struct tracepoint __tracepoint_svcrdma_wc_send_flush;
extern struct tracepoint __tracepoint_svcrdma_wc_send_err;
extern struct tracepoint __tracepoint_svcrdma_post_send;
extern struct tracepoint __tracepoint_svcrdma_dma_unmap_page;
extern struct tracepoint __tracepoint_svcrdma_dma_map_page;
extern struct tracepoint __tracepoint_svcrdma_dma_map_err;
extern struct tracepoint __tracepoint_svcrdma_send_pullup;
extern struct tracepoint __tracepoint_svcrdma_encode_wseg;
extern struct tracepoint __tracepoint_svcrdma_err_vers;
extern struct tracepoint __tracepoint_svcrdma_err_chunk;
extern struct tracepoint __tracepoint_svcrdma_send_err;

void rust_do_trace_svcrdma_sq_full(const struct svcxprt_rdma *rdma,
				   const struct rpc_rdma_cid *cid);
void rust_do_trace_svcrdma_sq_retry(const struct svcxprt_rdma *rdma,
				    const struct rpc_rdma_cid *cid);
void rust_do_trace_svcrdma_sq_post_err(const struct svcxprt_rdma *rdma,
				       const struct rpc_rdma_cid *cid, int status);
void rust_do_trace_svcrdma_wc_send(const struct rpc_rdma_cid *cid);
void rust_do_trace_svcrdma_wc_send_flush(const struct ib_wc *wc,
					 const struct rpc_rdma_cid *cid);
void rust_do_trace_svcrdma_wc_send_err(const struct ib_wc *wc,
				       const struct rpc_rdma_cid *cid);
void rust_do_trace_svcrdma_post_send(const struct svc_rdma_send_ctxt *ctxt);
void rust_do_trace_svcrdma_dma_unmap_page(const struct rpc_rdma_cid *cid,
					  u64 dma_addr, u32 length);
void rust_do_trace_svcrdma_dma_map_page(const struct rpc_rdma_cid *cid,
					u64 dma_addr, u32 length);
void rust_do_trace_svcrdma_dma_map_err(const struct rpc_rdma_cid *cid,
				       u64 dma_addr, u32 length);
void rust_do_trace_svcrdma_send_pullup(const struct svc_rdma_send_ctxt *ctxt,
				       unsigned int msglen);
void rust_do_trace_svcrdma_encode_wseg(const struct svc_rdma_send_ctxt *ctxt,
				       u32 segno, u32 handle, u32 length, u64 offset);
void rust_do_trace_svcrdma_err_vers(__be32 xid);
void rust_do_trace_svcrdma_err_chunk(__be32 xid);
void rust_do_trace_svcrdma_send_err(const struct svc_rqst *rqst, int status);
#endif /* CONFIG_TRACEPOINTS */

#endif /* SVC_RDMA_SENDTO_SHIM_H */
