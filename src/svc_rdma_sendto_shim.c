// SPDX-License-Identifier: GPL-2.0
/*
 * C shim of the Rust Send path, see svc_rdma_sendto_shim.h. Part of the
 * reimplementation of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
 * GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.
 */
#include <linux/moduleparam.h>
#include <linux/stddef.h>
#include <linux/build_bug.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/error-injection.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <linux/sunrpc/svc_rdma.h>
#include <linux/sunrpc/svc_rdma_pcl.h>
#ifdef RPCRDMA_RS_KUNIT
#include <kunit/test.h>
#include <kunit/test-bug.h>
#endif

#include "xprt_rdma.h"
#include <trace/events/rpcrdma.h>

#include "svc_rdma_sendto_shim.h"
#ifdef RPCRDMA_RS_MUTATE_reuse_in_flight
#include <linux/iommu.h>
#endif

/*
 * The prototypes the Rust crate implements, as the rest of rpcrdma sees
 * them: the build fails here if svc_rdma.h changes one. The Rust side
 * checks its definitions against the same header's bindings.
 */
#define RS_CHECK_PROTO(fn, type) \
	static_assert(__builtin_types_compatible_p(typeof(fn) *, type), #fn)
RS_CHECK_PROTO(svc_rdma_send_ctxts_destroy, void (*)(struct svcxprt_rdma *));
RS_CHECK_PROTO(svc_rdma_send_ctxt_get,
	       struct svc_rdma_send_ctxt *(*)(struct svcxprt_rdma *));
RS_CHECK_PROTO(svc_rdma_send_ctxts_drain, void (*)(struct svcxprt_rdma *));
RS_CHECK_PROTO(svc_rdma_send_ctxt_put,
	       void (*)(struct svcxprt_rdma *, struct svc_rdma_send_ctxt *));
RS_CHECK_PROTO(svc_rdma_wake_send_waiters, void (*)(struct svcxprt_rdma *, int));
RS_CHECK_PROTO(svc_rdma_sq_wait,
	       int (*)(struct svcxprt_rdma *, const struct rpc_rdma_cid *, int));
RS_CHECK_PROTO(svc_rdma_post_send_err,
	       int (*)(struct svcxprt_rdma *, const struct rpc_rdma_cid *,
		       const struct ib_send_wr *, const struct ib_send_wr *, int, int));
RS_CHECK_PROTO(svc_rdma_post_send,
	       int (*)(struct svcxprt_rdma *, struct svc_rdma_send_ctxt *));
RS_CHECK_PROTO(svc_rdma_map_reply_msg,
	       int (*)(struct svcxprt_rdma *, struct svc_rdma_send_ctxt *,
		       const struct svc_rdma_pcl *, const struct svc_rdma_pcl *,
		       const struct xdr_buf *));
RS_CHECK_PROTO(svc_rdma_send_error_msg,
	       void (*)(struct svcxprt_rdma *, struct svc_rdma_send_ctxt *,
			struct svc_rdma_recv_ctxt *, int));
RS_CHECK_PROTO(svc_rdma_sendto, int (*)(struct svc_rqst *));
RS_CHECK_PROTO(svc_rdma_result_payload,
	       int (*)(struct svc_rqst *, unsigned int, unsigned int));

#define LAYOUT_SIZE(t)			{ #t, "", sizeof(struct t) },
#define LAYOUT_FIELD(t, f)		{ #t, #f, offsetof(struct t, f) },
/* The Rust field path (third argument) matters only to the Rust side. */
#define LAYOUT_FIELD_AS(t, f, ...)	LAYOUT_FIELD(t, f)

const struct rs_layout_entry rs_layout_table[] = {
#include "bindings/layout_fields.h"
};

const unsigned int rs_layout_table_len = ARRAY_SIZE(rs_layout_table);

/*
 * The Send path's leak counters, read-only under
 * /sys/module/rpcrdma/parameters/: parameters need no module init hook,
 * which the Rust crate does not have, and vanish with the module.
 */
static int rs_stat_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%lld\n", rs_stat_read((int)(long)kp->arg));
}

static const struct kernel_param_ops rs_stat_ops = {
	.get = rs_stat_get,
};

module_param_cb(send_ctxts_live, &rs_stat_ops, (void *)0, 0444);
MODULE_PARM_DESC(send_ctxts_live, "Send contexts allocated and not freed (read-only)");
module_param_cb(send_pages_held, &rs_stat_ops, (void *)1, 0444);
MODULE_PARM_DESC(send_pages_held, "Reply pages held by send contexts (read-only)");
module_param_cb(send_sges_mapped, &rs_stat_ops, (void *)2, 0444);
MODULE_PARM_DESC(send_sges_mapped, "Payload SGEs DMA-mapped and not unmapped (read-only)");
module_param_cb(send_ctxts_reclaimed, &rs_stat_ops, (void *)3, 0444);
MODULE_PARM_DESC(send_ctxts_reclaimed,
		 "Send contexts whose Send completion never came, reclaimed at transport teardown (read-only)");

/* Statically initialised: the Rust crate has no module init of its own. */
LIST_HEAD(rs_send_ctxts_all);
DEFINE_SPINLOCK(rs_send_ctxts_all_lock);

/*
 * The glue below, up to the tracepoints, stands for static inlines and
 * macros that C expands where they are used. It is notrace, as the kernel
 * makes every inline function (compiler_types.h): an expansion has no
 * ftrace entry (nor have the crate's Rust functions), and no use should
 * pay for a patched-out __fentry__ call.
 */

notrace void rs_list_del(struct list_head *entry)
{
	list_del(entry);
}

/* Transport state */

notrace unsigned long rs_svc_serv_maxpages(const struct svcxprt_rdma *rdma)
{
	return svc_serv_maxpages(rdma->sc_xprt.xpt_server);
}

notrace void rs_send_cid_init(struct svcxprt_rdma *rdma, struct rpc_rdma_cid *cid)
{
	svc_rdma_send_cid_init(rdma, cid);
}

notrace void rs_xprt_set_data_and_enqueue(struct svcxprt_rdma *rdma)
{
	set_bit(XPT_DATA, &rdma->sc_xprt.xpt_flags);
	svc_xprt_enqueue(&rdma->sc_xprt);
}

/*
 * Transport teardown when ib_drain_qp() left work requests of the Send
 * path uncompleted (ctxt.rs, release_unreturned): destroys the QP now, so
 * that nothing posted on it can complete any more, then lets the Send
 * CQ's polling work handle what it was already given and makes sure it
 * cannot run again (ib_free_cq() drops whatever the CQ still holds).
 * svc_rdma_free() then finds sc_qp NULL and skips its own
 * ib_destroy_qp(). False, with the QP destroyed, for a CQ not polled
 * from a workqueue, which svc_rdma_accept() never creates. The transport
 * is marked XPT_DEAD first (svc_delete_xprt() has, but for one never
 * added to its server): a Send path that finds it dead stops before it
 * would use the QP.
 */
bool rs_destroy_qp_and_quiesce_send_cq(struct svcxprt_rdma *rdma)
{
	struct ib_cq *cq = rdma->sc_sq_cq;

	set_bit(XPT_DEAD, &rdma->sc_xprt.xpt_flags);

	if (rdma->sc_qp && !IS_ERR(rdma->sc_qp)) {
		ib_destroy_qp(rdma->sc_qp);
		rdma->sc_qp = NULL;
	}
	if (!cq || IS_ERR(cq))
		return true;
	if (WARN_ON_ONCE(cq->poll_ctx != IB_POLL_WORKQUEUE &&
			 cq->poll_ctx != IB_POLL_UNBOUND_WORKQUEUE))
		return false;
	/* A poll may requeue itself: flush what is queued, then cancel. */
	flush_work(&cq->work);
	cancel_work_sync(&cq->work);
	return true;
}

notrace void rs_sq_starve_inc(void)
{
	percpu_counter_inc(&svcrdma_stat_sq_starve);
}

#ifdef RPCRDMA_RS_KUNIT
/* For the KUnit suite; percpu_counter_sum() differs between SMP and UP. */
notrace s64 rs_sq_starve_sum(void)
{
	return percpu_counter_sum(&svcrdma_stat_sq_starve);
}

/**
 * rs_task_asleep - whether a task sleeps, off its CPU
 * @task: a task the caller holds a reference on
 *
 * A thread going to sleep sets its state before it checks its wait
 * condition, and leaves its CPU only in schedule(), after the check; a
 * wake-up makes the state TASK_WAKING or TASK_RUNNING before it returns.
 * So once this is true after a wake-up, the thread has checked its
 * condition again and gone back to sleep. The KUnit suite waits on this
 * rather than for a fixed time. Without SMP there is no on_cpu: a thread
 * preempted between setting its state and schedule() then counts as
 * asleep.
 *
 * Return: true if @task sleeps (TASK_NORMAL) and is off its CPU.
 */
notrace bool rs_task_asleep(struct task_struct *task)
{
	if (!(READ_ONCE(task->__state) & TASK_NORMAL))
		return false;
#ifdef CONFIG_SMP
	/*
	 * The state was set while on_cpu was 1 (the task runs): read after
	 * it, a 0 is the switch away, which follows the condition check.
	 */
	smp_rmb();
	return !READ_ONCE(task->on_cpu);
#else
	return task != current;
#endif
}

/*
 * What the KUnit stand-in transport (src/fakes.rs) points to, so that it
 * is a transport as the Rust types describe one: a device with no DMA
 * device (the IB core's DMA helpers take their virtual-DMA path, as on
 * soft-RoCE), whose post_send posts nothing; a PD and a QP on it; a Send
 * CQ; a server whose largest message takes 5 pages (8 page slots).
 */
struct rs_fake_parts {
	struct ib_device device;
	struct ib_pd pd;
	struct ib_qp qp;
	struct ib_cq cq;
	struct svc_serv serv;
};

static int rs_fake_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			     const struct ib_send_wr **bad_wr)
{
	*bad_wr = wr;
	return -EIO;
}

/**
 * rs_fake_parts_attach - give a KUnit stand-in transport its device
 * @rdma: a zeroed transport only the caller knows
 *
 * Return: what to pass to rs_fake_parts_free() once the transport and
 * its ctxts are gone, or NULL when memory is short or the IB core has no
 * virtual-DMA path (HIGHMEM), which the device relies on.
 */
void *rs_fake_parts_attach(struct svcxprt_rdma *rdma)
{
	struct rs_fake_parts *p;

	if (!IS_ENABLED(CONFIG_INFINIBAND_VIRT_DMA))
		return NULL;
	p = kzalloc_obj(*p);
	if (!p)
		return NULL;
	p->device.ops.post_send = rs_fake_post_send;
	p->pd.device = &p->device;
	p->qp.device = &p->device;
	p->cq.device = &p->device;
	p->serv.sv_max_mesg = 5 * PAGE_SIZE;
	rdma->sc_pd = &p->pd;
	rdma->sc_qp = &p->qp;
	rdma->sc_sq_cq = &p->cq;
	rdma->sc_xprt.xpt_server = &p->serv;
	return p;
}

/**
 * rs_fake_parts_free - free what rs_fake_parts_attach() allocated
 * @parts: its return value
 */
void rs_fake_parts_free(void *parts)
{
	kfree(parts);
}

/**
 * rs_kunit_suppress_warnings_begin - suppress the running test's WARN*()s
 *
 * For a KUnit case that drives a path whose report is a warning: the
 * warning is counted instead of printed, so that the run's log (where any
 * WARNING fails the run) stays clean while the case still sees it happen.
 *
 * Return: a handle for rs_kunit_suppress_warnings_end(), or NULL (the
 * test is failed) outside a test or when memory is short.
 */
void *rs_kunit_suppress_warnings_begin(void)
{
	struct kunit *test = kunit_get_current_test();

	return test ? kunit_start_suppress_warning(test) : NULL;
}

/**
 * rs_kunit_suppress_warnings_end - end what the begin call started
 * @handle: its return value
 *
 * Return: how many warnings were suppressed meanwhile.
 */
int rs_kunit_suppress_warnings_end(void *handle)
{
	struct kunit *test = kunit_get_current_test();
	int n = kunit_suppressed_warning_count(handle);

	if (test)
		kunit_end_suppress_warning(test, handle);
	return n;
}
#endif

/*
 * Sleeps on @wq until the transport closes or @v reaches @target: equals
 * it (@exact: a wait ticket's turn) or is at least it (free SQ entries).
 * One function for both waits of svc_rdma_sq_wait: wait_event is large.
 */
notrace void rs_wait_sq(struct svcxprt_rdma *rdma, wait_queue_head_t *wq,
			const atomic_t *v, int target, bool exact)
{
	wait_event(*wq, test_bit(XPT_CLOSE, &rdma->sc_xprt.xpt_flags) ||
		   (exact ? atomic_read(v) == target : atomic_read(v) >= target));
}

/* Memory */

notrace void rs_xdr_buf_init(struct xdr_buf *buf, void *start, size_t len)
{
	xdr_buf_init(buf, start, len);
}

notrace void *rs_page_address(struct page *page)
{
	return page_address(page);
}

/* Verbs */

/*
 * The Rust side maps through the RDMA abstraction (rdma::dma), whose
 * helpers wrap ib_dma_map_page() and ib_dma_map_single(). When the module
 * compiles its own copy of them (RPCRDMA_RS_OWN_HELPERS: a kernel without
 * the abstractions), the kernel's function error injection may fail them
 * (fail_function with retval -1, which is DMA_MAPPING_ERROR): the
 * production build's mapping error paths under test without a build of
 * their own (tests/vm/guest/failfunc.sh). The annotation is an entry in a
 * table; the code is unchanged.
 */
#ifdef RPCRDMA_RS_OWN_HELPERS
ALLOW_ERROR_INJECTION(rust_helper_ib_dma_map_page, ERRNO);
ALLOW_ERROR_INJECTION(rust_helper_ib_dma_map_single, ERRNO);
#endif

/*
 * A failed mapping's tracepoint (svcrdma_dma_map_err) reports the address
 * the map call returned, DMA_MAPPING_ERROR: the Rust side passes U64_MAX.
 */
static_assert(DMA_MAPPING_ERROR == U64_MAX, "DMA_MAPPING_ERROR is not ~0");

#ifdef RPCRDMA_RS_MUTATE_wrong_direction
/*
 * Test build: payload fragments are mapped DMA_FROM_DEVICE (the Rust
 * side's PAYLOAD_DIRECTION), as if for the device to write, and unmapped
 * so below; the device's read must show it. Headers keep DMA_TO_DEVICE.
 */
#define RS_PAYLOAD_DMA_DIR DMA_FROM_DEVICE
#else
#define RS_PAYLOAD_DMA_DIR DMA_TO_DEVICE
#endif

/* One payload SGE, unmapped as it was mapped: a kvec single, a page fragment page. */
static __always_inline void rs_unmap_one(struct ib_device *dev, u64 addr,
					 size_t len, enum dma_data_direction dir,
					 bool single)
{
	if (single)
		ib_dma_unmap_single(dev, addr, len, dir);
	else
		ib_dma_unmap_page(dev, addr, len, dir);
}

/*
 * A reply's payload SGEs, unmapped in one call (none to do without DMA).
 * Bit i of @single: sges[i] is a kvec's ib_dma_map_single() mapping.
 */
notrace void rs_ib_dma_unmap_pages(struct ib_device *dev,
				   const struct ib_sge *sges, size_t n, u64 single)
{
	size_t i;

	if (ib_uses_virt_dma(dev))
		return;
	for (i = 0; i < n; i++) {
		bool s = i < 64 && (single >> i) & 1;

#ifdef RPCRDMA_RS_MUTATE_unmap_in_flight
		/* Test build: the first fragment was unmapped at the post. */
		if (i == 0)
			continue;
#endif
#ifdef RPCRDMA_RS_MUTATE_reuse_in_flight
		/* Test build: its mapping again at the post failed. */
		if (ib_dma_mapping_error(dev, sges[i].addr))
			continue;
#endif
#ifdef RPCRDMA_RS_MUTATE_double_unmap
		/* Test build: the first payload fragment unmapped twice. */
		if (i == 0)
			rs_unmap_one(dev, sges[i].addr, sges[i].length,
				     DMA_TO_DEVICE, s);
#endif
#ifdef RPCRDMA_RS_MUTATE_unmap_wrong_len
		/* Test build: the first payload fragment unmapped one byte short. */
		if (i == 0 && sges[i].length > 1) {
			rs_unmap_one(dev, sges[i].addr, sges[i].length - 1,
				     DMA_TO_DEVICE, s);
			continue;
		}
#endif
		rs_unmap_one(dev, sges[i].addr, sges[i].length,
			     RS_PAYLOAD_DMA_DIR, s);
	}
}

/*
 * ib_post_send() of a reply's WR chain, after making its transport header
 * (@hdr, the Send's first SGE) visible to the device. C's
 * svc_rdma_post_send syncs before it waits for SQ entries; syncing after
 * the wait, in the same call as the post, saves a call per reply and
 * changes nothing the device sees: the header is not written meanwhile.
 * The QP's device is the one C syncs on (rdma->sc_cm_id->device: the
 * QP is created on the CM id's device).
 */
static noinline notrace int
rs_sync_header_and_post(struct ib_qp *qp, const struct ib_sge *hdr,
			const struct ib_send_wr *wr,
			const struct ib_send_wr **bad_wr)
{
#if defined(RPCRDMA_RS_MUTATE_unmap_in_flight)
	/*
	 * Test build: the Send's first payload fragment unmapped before the
	 * post (rs_ib_dma_unmap_pages then skips it), so the device reads it
	 * through an address that is no longer mapped.
	 */
	const struct ib_send_wr *w;

	for (w = wr; w; w = w->next)
		if (w->sg_list == hdr && w->num_sge > 1)
			ib_dma_unmap_page(qp->device, w->sg_list[1].addr,
					  w->sg_list[1].length, DMA_TO_DEVICE);
#endif
#if defined(RPCRDMA_RS_MUTATE_skip_header_sync)
	/* Test build: the header is never made visible to the device. */
	return ib_post_send(qp, wr, bad_wr);
#elif defined(RPCRDMA_RS_MUTATE_short_sync)
	/* Test build: the header's last 8 bytes never made visible. */
	ib_dma_sync_single_for_device(qp->device, hdr->addr,
				      hdr->length > 8 ? hdr->length - 8 : 1,
				      DMA_TO_DEVICE);
	return ib_post_send(qp, wr, bad_wr);
#elif defined(RPCRDMA_RS_MUTATE_sge_overrun)
	/*
	 * Test build: the Send's first payload SGE posted one byte longer
	 * than its mapping, put back after the post so that the unmap is
	 * right: the device reads past the mapping's end.
	 */
	struct ib_sge *over = NULL;
	const struct ib_send_wr *w;
	int ret;

	for (w = wr; w && !over; w = w->next)
		if (w->sg_list == hdr && w->num_sge > 1)
			over = (struct ib_sge *)&w->sg_list[1];
	if (over)
		over->length++;
	ib_dma_sync_single_for_device(qp->device, hdr->addr, hdr->length,
				      DMA_TO_DEVICE);
	ret = ib_post_send(qp, wr, bad_wr);
	if (over)
		over->length--;
	return ret;
#elif defined(RPCRDMA_RS_MUTATE_reuse_in_flight)
	/*
	 * Test build, behind an IOMMU: the Send's first payload fragment
	 * unmapped right after the post, before the device reads it, and the
	 * same memory mapped again at once. The IOMMU's allocator keeps the
	 * IOVA just freed for the next mapping of its size, so the device's
	 * read goes through a live mapping of the right bytes: only the
	 * mapping's generation tells it from the one posted. The SGE takes
	 * the new mapping's address, which the release unmaps. Run on one
	 * vCPU (dma-mutations.sh): the device's thread, and the completion
	 * that would release this ctxt, cannot run before this returns.
	 */
	struct device *dma_dev = qp->device->dma_device;
	struct iommu_domain *domain = dma_dev ? iommu_get_domain_for_dev(dma_dev) : NULL;
	struct ib_sge *frag = NULL;
	const struct ib_send_wr *w;
	phys_addr_t phys = 0;
	u64 again;
	int ret;

	for (w = wr; w && !frag; w = w->next)
		if (w->sg_list == hdr && w->num_sge > 1)
			frag = (struct ib_sge *)&w->sg_list[1];
	if (!domain)
		pr_info_once("rpcrdma: mutation reuse_in_flight: inactive, the device is not behind an IOMMU\n");
	else if (frag)
		phys = iommu_iova_to_phys(domain, frag->addr);
	ib_dma_sync_single_for_device(qp->device, hdr->addr, hdr->length,
				      DMA_TO_DEVICE);
	ret = ib_post_send(qp, wr, bad_wr);
	if (ret || !phys)
		return ret;
	ib_dma_unmap_page(qp->device, frag->addr, frag->length, DMA_TO_DEVICE);
	again = ib_dma_map_page(qp->device, phys_to_page(phys),
				offset_in_page(phys), frag->length, DMA_TO_DEVICE);
	if (again == frag->addr)
		pr_info_once("rpcrdma: mutation reuse_in_flight: a posted fragment's DMA address came back for the same memory after its unmap (%llx)\n",
			     again);
	else
		pr_info_once("rpcrdma: mutation reuse_in_flight: a posted fragment's DMA address did not come back after its unmap (%llx, then %llx)\n",
			     frag->addr, again);
	/* The release unmaps it (not if the map failed). */
	frag->addr = again;
	return 0;
#elif defined(RPCRDMA_RS_MUTATE_sync_after_post)
	/* Test build: the header made visible only after the post. */
	int ret = ib_post_send(qp, wr, bad_wr);

	ib_dma_sync_single_for_device(qp->device, hdr->addr, hdr->length,
				      DMA_TO_DEVICE);
	return ret;
#else
	ib_dma_sync_single_for_device(qp->device, hdr->addr, hdr->length,
				      DMA_TO_DEVICE);
	return ib_post_send(qp, wr, bad_wr);
#endif
}

/*
 * A device without DMA (rxe, siw) has nothing to sync. @bad_wr is never
 * NULL (the Rust caller passes its own), and ib_post_send() with a
 * non-NULL @bad_wr is the device's post_send op: called directly, both
 * ways are tail calls (the kernel's -fno-delete-null-pointer-checks keeps
 * a nonnull attribute from removing ib_post_send()'s on-stack dummy).
 * fail_function may fail it (any errno): then nothing is posted, and
 * *@bad_wr is left as the caller set it, at the chain's first WR.
 */
noinline notrace int rs_ib_post_send(struct ib_qp *qp, const struct ib_sge *hdr,
			    const struct ib_send_wr *wr,
			    const struct ib_send_wr **bad_wr)
{
	if (!ib_uses_virt_dma(qp->device))
		return rs_sync_header_and_post(qp, hdr, wr, bad_wr);
	return qp->device->ops.post_send(qp, wr, bad_wr);
}
ALLOW_ERROR_INJECTION(rs_ib_post_send, ERRNO);

/*
 * Tracepoints. The events are created by rpcrdma's module.c
 * (CREATE_TRACE_POINTS); the Rust crate tests each one's static key inline
 * (src/abstractions/trace.rs) and calls these only when the event is enabled. Each is
 * what CREATE_RUST_TRACE_POINTS would define, with the kernel's own macro
 * and the event's TP_PROTO, for the events the Rust Send path fires.
 */
#ifdef CONFIG_TRACEPOINTS
__DEFINE_RUST_DO_TRACE(svcrdma_sq_full,
		       PARAMS(const struct svcxprt_rdma *rdma, const struct rpc_rdma_cid *cid),
		       PARAMS(rdma, cid))
__DEFINE_RUST_DO_TRACE(svcrdma_sq_retry,
		       PARAMS(const struct svcxprt_rdma *rdma, const struct rpc_rdma_cid *cid),
		       PARAMS(rdma, cid))
__DEFINE_RUST_DO_TRACE(svcrdma_sq_post_err,
		       PARAMS(const struct svcxprt_rdma *rdma,
			      const struct rpc_rdma_cid *cid, int status),
		       PARAMS(rdma, cid, status))
__DEFINE_RUST_DO_TRACE(svcrdma_wc_send,
		       PARAMS(const struct rpc_rdma_cid *cid),
		       PARAMS(cid))
__DEFINE_RUST_DO_TRACE(svcrdma_wc_send_flush,
		       PARAMS(const struct ib_wc *wc, const struct rpc_rdma_cid *cid),
		       PARAMS(wc, cid))
__DEFINE_RUST_DO_TRACE(svcrdma_wc_send_err,
		       PARAMS(const struct ib_wc *wc, const struct rpc_rdma_cid *cid),
		       PARAMS(wc, cid))
__DEFINE_RUST_DO_TRACE(svcrdma_post_send,
		       PARAMS(const struct svc_rdma_send_ctxt *ctxt),
		       PARAMS(ctxt))
__DEFINE_RUST_DO_TRACE(svcrdma_dma_unmap_page,
		       PARAMS(const struct rpc_rdma_cid *cid, u64 dma_addr, u32 length),
		       PARAMS(cid, dma_addr, length))
__DEFINE_RUST_DO_TRACE(svcrdma_dma_map_page,
		       PARAMS(const struct rpc_rdma_cid *cid, u64 dma_addr, u32 length),
		       PARAMS(cid, dma_addr, length))
__DEFINE_RUST_DO_TRACE(svcrdma_dma_map_err,
		       PARAMS(const struct rpc_rdma_cid *cid, u64 dma_addr, u32 length),
		       PARAMS(cid, dma_addr, length))
__DEFINE_RUST_DO_TRACE(svcrdma_send_pullup,
		       PARAMS(const struct svc_rdma_send_ctxt *ctxt, unsigned int msglen),
		       PARAMS(ctxt, msglen))
__DEFINE_RUST_DO_TRACE(svcrdma_encode_wseg,
		       PARAMS(const struct svc_rdma_send_ctxt *ctxt, u32 segno,
			      u32 handle, u32 length, u64 offset),
		       PARAMS(ctxt, segno, handle, length, offset))
__DEFINE_RUST_DO_TRACE(svcrdma_err_vers, PARAMS(__be32 xid), PARAMS(xid))
__DEFINE_RUST_DO_TRACE(svcrdma_err_chunk, PARAMS(__be32 xid), PARAMS(xid))
__DEFINE_RUST_DO_TRACE(svcrdma_send_err,
		       PARAMS(const struct svc_rqst *rqst, int status),
		       PARAMS(rqst, status))
#endif /* CONFIG_TRACEPOINTS */

#ifdef RPCRDMA_RS_FAULT_INJECTION
/*
 * Fault injection (RPCRDMA_RS_FAULT_INJECTION=y builds only), with the
 * kernel's fault-injection framework. Each point is a fault_attr set by
 * writing "<interval>,<probability>,<space>,<times>" (as for failslab=) to
 * /sys/module/rpcrdma/parameters/fail_<point>; reading it gives the number
 * of faults injected there so far.
 */
#include <linux/fault-inject.h>
#include <linux/delay.h>

static struct fault_attr rs_fault_attrs[RS_FAULT_POINTS] = {
	[0 ... RS_FAULT_POINTS - 1] = FAULT_ATTR_INITIALIZER,
};

static atomic_t rs_fault_injected[RS_FAULT_POINTS];

bool rs_fault(int point)
{
	if (point < 0 || point >= RS_FAULT_POINTS ||
	    !should_fail(&rs_fault_attrs[point], 1))
		return false;
	atomic_inc(&rs_fault_injected[point]);
	return true;
}

int rs_ib_post_send_faulty(struct ib_qp *qp, const struct ib_sge *hdr,
			   const struct ib_send_wr *wr,
			   const struct ib_send_wr **bad_wr)
{
	const struct ib_send_wr *last = wr, *prev = NULL;
	struct ib_send_wr *cut;
	int ret;

	if (rs_fault(RS_FAULT_POST_FIRST)) {
		*bad_wr = wr;
		return -ENOMEM;
	}
	while (last->next) {
		prev = last;
		last = last->next;
	}
	/* The Send, last, carries DMA-mapped payload after its header SGE. */
	if (last->num_sge > 1 && rs_fault(RS_FAULT_POST_MAPPED)) {
		*bad_wr = wr;
		return -ENOMEM;
	}
	if (!prev || !rs_fault(RS_FAULT_POST_MID))
		return rs_ib_post_send(qp, hdr, wr, bad_wr);
	/* Post every WR but the last (the Send), then fail the Send. */
	cut = (struct ib_send_wr *)prev;
	cut->next = NULL;
	ret = ib_post_send(qp, wr, bad_wr);
	cut->next = (struct ib_send_wr *)last;
	if (ret)
		return ret;
	*bad_wr = last;
	return -ENOMEM;
}

static int rs_fault_set(const char *val, const struct kernel_param *kp)
{
	struct fault_attr *attr = &rs_fault_attrs[(long)kp->arg];
	char buf[64];

	strscpy(buf, val, sizeof(buf));
	if (!setup_fault_attr(attr, strim(buf)))
		return -EINVAL;
	/* A line per fault, without the stack dump of the default (2). */
	attr->verbose = 1;
	return 0;
}

static int rs_fault_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&rs_fault_injected[(long)kp->arg]));
}

static const struct kernel_param_ops rs_fault_ops = {
	.set = rs_fault_set,
	.get = rs_fault_get,
};

module_param_cb(fail_send_ctxt_get, &rs_fault_ops, (void *)RS_FAULT_CTXT_GET, 0644);
MODULE_PARM_DESC(fail_send_ctxt_get, "Fault injection: svc_rdma_send_ctxt_get returns NULL");
module_param_cb(fail_dma_map, &rs_fault_ops, (void *)RS_FAULT_DMA_MAP, 0644);
MODULE_PARM_DESC(fail_dma_map, "Fault injection: mapping a reply page fails");
module_param_cb(fail_post_first, &rs_fault_ops, (void *)RS_FAULT_POST_FIRST, 0644);
MODULE_PARM_DESC(fail_post_first, "Fault injection: ib_post_send fails at the first WR");
module_param_cb(fail_post_mid, &rs_fault_ops, (void *)RS_FAULT_POST_MID, 0644);
MODULE_PARM_DESC(fail_post_mid, "Fault injection: ib_post_send fails at the Send after posting the chunk Writes");
module_param_cb(fail_post_mapped, &rs_fault_ops, (void *)RS_FAULT_POST_MAPPED, 0644);
MODULE_PARM_DESC(fail_post_mapped, "Fault injection: ib_post_send fails at the first WR of a reply whose Send carries DMA-mapped payload");

/*
 * Not a fault: a delay that widens a race window for the teardown test over
 * the stranding siw (strand_sends=3), whose late flush must land between
 * svc_rdma_free()'s final svc_rdma_send_ctxts_drain() and the walk over
 * the transport's send ctxts in svc_rdma_send_ctxts_destroy().
 */
static unsigned int rs_teardown_pause_ms;
module_param_named(teardown_pause_ms, rs_teardown_pause_ms, uint, 0644);
MODULE_PARM_DESC(teardown_pause_ms, "Test only: sleep this long in svc_rdma_send_ctxts_destroy, before its walk over the transport's send ctxts");

void rs_fault_teardown_pause(void)
{
	unsigned int ms = READ_ONCE(rs_teardown_pause_ms);

	if (ms)
		msleep(ms);
}
#endif /* RPCRDMA_RS_FAULT_INJECTION */
