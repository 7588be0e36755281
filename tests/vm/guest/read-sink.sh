#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# read-sink.sh MODULE[@FABRIC]...: NFS WRITEs whose data the server pulls
# with RDMA Reads (Read chunks), every byte verified, for each MODULE in
# turn in one VM: a build dir under build*/ (insmod), or with
# rs_load=modprobe (a distribution's kernel) "stock" or "rust", what a
# plain modprobe loads; over FABRIC, rxe or siw (default: rs_fabric's).
# Meant for the DMA-mapped mode (vm-run.sh -D): where DMA bounces, the
# Read sinks' bytes reach the pages only when they are unmapped, so a
# server that hands them to knfsd first writes wrong bytes to the file
# (scripts/module-patches/0001, Documentation/upstream-reports.rst report 8).
#
# For each module, over NFSv3 and NFSv4.1: O_DIRECT writes of 4 KiB,
# 64 KiB and 1 MiB of random data (over the inline threshold: Read chunks)
# and one of 1000 bytes (inline, the control), each compared byte for byte
# with what knfsd wrote to the exported file (read on the server, in this
# VM). Records per module LABEL (MODULE@FABRIC with /, -, @ and . made _):
#   rs_LABEL_flavour, _writes, _read_chunks (svcrdma_wc_read events: the
#   Read chunks completed), _chunk_bytes, _chunk_bytes_wrong,
#   _chunk_files_wrong, _inline_bytes_wrong, _io_ok (every write and
#   mount succeeded), _counter_reads (the rdma_stat_* counters read byte
#   by byte afterwards: scripts/module-patches/0002).
# The host judges (scripts/read-sink.sh): a module with the fixes must
# write every byte right and its counters, read byte by byte, must give
# their values' first bytes; one without them, in this mode, must not.
. /work/tests/vm/guest/lib.sh

[ $# -gt 0 ] || { echo "usage: read-sink.sh MODULE..." >&2; exit 2; }
SIZES="4096 65536 1048576"
for sz in $SIZES 1000; do head -c $sz /dev/urandom >/tmp/src-$sz; done
MOUNT_OPTS=soft,timeo=100,retrans=2
# use_fabric FABRIC: the software RDMA device of FABRIC on eth0, in place
# of the one there (the module is unloaded, knfsd stopped).
use_fabric() {
	[ "$1" != "$FABRIC" ] || return 0
	# (lib.sh's $dev is the DMA device after setup_fabric: not used here.)
	rdma link delete "$(rdma_dev "$FABRIC")"
	FABRIC=$1
	rdev=$(rdma_dev "$FABRIC")
	case $FABRIC in siw) modprobe siw ;; *) modprobe rdma_rxe ;; esac
	rdma link add "$rdev" type "$FABRIC" netdev eth0
	rdma link show | grep -q "$rdev/" || { fail "$rdev did not come up"; return 1; }
	log "$FABRIC: $(rdma link show "$rdev/1")"
	dma_mode_start eth0 "$rdev"
}
rdma_dev() { case $1 in siw) echo siw0 ;; *) echo rxe0 ;; esac; }

# counter_reads: how /proc/sys/sunrpc/svc_rdma/rdma_stat_* read byte by
# byte, with the load over (the values stand still): "ok" when each such
# read is a prefix of the value one read gives, else the counters where
# it is not. The handler without scripts/module-patches/0002 copies the
# value's first bytes again at every offset (990 reads as "9999"); with
# the fix, a read past offset 0 ends the file, as in the generic sysctl
# handlers.
counter_reads() {
	bad=
	for c in recv read write sq_starve; do
		f=/proc/sys/sunrpc/svc_rdma/rdma_stat_$c
		whole=$(cat $f) bytes=$(dd if=$f bs=1 status=none | tr '\n' /)
		case "$whole/" in
		"$bytes"*) ;;
		*) bad="$bad $c=$whole read as $bytes" ;;
		esac
	done
	echo "${bad:-ok}" | sed 's/^ //'
}

first=1
for spec in "$@"; do
	m=${spec%@*}
	fabric=$FABRIC
	case $spec in *@*) fabric=${spec#*@} ;; esac
	label=$(echo "$spec" | tr -- '-/@.' '____')
	if [ "${rs_load:-insmod}" = modprobe ]; then
		flavour=$m ko=rpcrdma
		load_rpcrdma "$m" || exit 1
	else
		ko=$MODULES/$m/rpcrdma.ko
		flavour=$(modinfo -F sendto_flavour "$ko")
		rs_module_dir=$m load_rpcrdma "$flavour" || exit 1
	fi
	result "rs_${label}_flavour" "$flavour"
	result "rs_${label}_fabric" "$fabric"
	# The fixes it names (none: the distribution's own), with what became of each.
	result "rs_${label}_fixes" "$(modinfo -F fixes "$ko" 2>/dev/null | sed 's/^\([^:]*\): \([^;]*\);.*/\1 (\2)/' | paste -sd' ' -)"
	if [ $first = 1 ]; then
		FABRIC=$fabric
		setup_fabric
		start_nfsd
		first=0
	else
		use_fabric "$fabric" || exit 1
		rpc.nfsd "${NFSD_THREADS:-8}"
		echo "rdma $RDMA_PORT" >/proc/fs/nfsd/portlist
	fi
	trace_start rpcrdma:svcrdma_wc_read
	writes=0 bytes=0 wrong=0 files_wrong=0 inline_wrong=0 io_ok=1
	for vers in 3 4.1; do
		dir=/mnt/rs$(echo $vers | tr -d .)
		if ! timeout 120 sh -c ". /work/tests/vm/guest/lib.sh; MOUNT_OPTS=$MOUNT_OPTS mount_rdma $vers $dir"; then
			fail "read-sink $spec: NFSv$vers mount over RDMA"
			io_ok=0
			continue
		fi
		for sz in $SIZES 1000; do
			f=w-$label-v$vers-$sz
			if ! timeout 120 dd if=/tmp/src-$sz of=$dir/$f bs=$sz count=1 oflag=direct conv=fsync status=none; then
				fail "read-sink $spec: NFSv$vers O_DIRECT write of $sz bytes"
				io_ok=0
				continue
			fi
			writes=$((writes + 1))
			# What knfsd wrote, as the server's file system has it.
			n=$(cmp -l /tmp/src-$sz "$EXPORT/$f" 2>/dev/null | wc -l)
			[ "$(stat -c %s "$EXPORT/$f")" = "$sz" ] || n=$((n + 1))
			if [ $sz = 1000 ]; then
				inline_wrong=$((inline_wrong + n))
			else
				bytes=$((bytes + sz))
				wrong=$((wrong + n))
				[ "$n" = 0 ] || files_wrong=$((files_wrong + 1))
			fi
			log "read-sink $spec: NFSv$vers write of $sz bytes: $n bytes wrong"
			rm -f "$EXPORT/$f"
		done
		timeout 60 umount $dir || timeout 30 umount -f -l $dir || true
	done
	trace_stop
	result "rs_${label}_writes" $writes
	result "rs_${label}_read_chunks" "$(trace_count svcrdma_wc_read)"
	result "rs_${label}_chunk_bytes" $bytes
	result "rs_${label}_chunk_bytes_wrong" $wrong
	result "rs_${label}_chunk_files_wrong" $files_wrong
	result "rs_${label}_inline_bytes_wrong" $inline_wrong
	result "rs_${label}_io_ok" $io_ok
	result "rs_${label}_counter_reads" "$(counter_reads)"
	rpc.nfsd 0
	echo > /sys/kernel/tracing/set_event
	unload_rpcrdma 30 || { fail "read-sink $spec: rpcrdma did not unload within 30 s"; exit 1; }
done
dma_mode_check "read-sink"
result failures $FAILS
[ "$FAILS" = 0 ]
