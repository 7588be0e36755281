// TEMPORARY stand-in (replaced by the trace-inline branch).
#![allow(dead_code, missing_docs, clippy::missing_safety_doc)]
use crate::sys;
macro_rules! fwd {
    ($($name:ident => $c:ident ($($a:ident : $t:ty),*);)*) => {$(
        #[inline(always)]
        pub(crate) unsafe fn $name($($a: $t),*) { unsafe { sys::$c($($a),*) } }
    )*};
}
fwd! {
    sq_full => rs_trace_sq_full(r: *const sys::svcxprt_rdma, c: *const sys::rpc_rdma_cid);
    sq_retry => rs_trace_sq_retry(r: *const sys::svcxprt_rdma, c: *const sys::rpc_rdma_cid);
    sq_post_err => rs_trace_sq_post_err(r: *const sys::svcxprt_rdma, c: *const sys::rpc_rdma_cid, s: i32);
    wc_send => rs_trace_wc_send(c: *const sys::rpc_rdma_cid);
    wc_send_flush => rs_trace_wc_send_flush(w: *const sys::ib_wc, c: *const sys::rpc_rdma_cid);
    wc_send_err => rs_trace_wc_send_err(w: *const sys::ib_wc, c: *const sys::rpc_rdma_cid);
    post_send => rs_trace_post_send(x: *const sys::svc_rdma_send_ctxt);
    dma_unmap_page => rs_trace_dma_unmap_page(c: *const sys::rpc_rdma_cid, a: u64, l: u32);
    dma_map_page => rs_trace_dma_map_page(c: *const sys::rpc_rdma_cid, a: u64, l: u32);
    dma_map_err => rs_trace_dma_map_err(c: *const sys::rpc_rdma_cid, a: u64, l: u32);
    send_pullup => rs_trace_send_pullup(x: *const sys::svc_rdma_send_ctxt, m: u32);
    encode_wseg => rs_trace_encode_wseg(x: *const sys::svc_rdma_send_ctxt, s: u32, h: u32, l: u32, o: u64);
    err_vers => rs_trace_err_vers(x: u32);
    err_chunk => rs_trace_err_chunk(x: u32);
    send_err => rs_trace_send_err(r: *const sys::svc_rqst, s: i32);
}
