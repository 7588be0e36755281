#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# profile.sh N FLAVOUR:MODULE_DIR...: the workloads of the instruction
# profile (scripts/profile.sh). For each flavour in turn, in this one boot:
# load that build of rpcrdma.ko, serve NFS over soft-RoCE to this guest's
# own NFS client (NFSv3 and NFSv4.1 mounts), and run every reply class of
# profile_load.py, N RPCs each, inside a window of the profiler plugin; then
# the error classes over raw RPC-over-RDMA. Writes the windows in order to
# /results/profile-windows.txt ("INDEX FLAVOUR CLASS VERSION N") and, per
# flavour, the kernel's text symbols with the module loaded to
# /results/kallsyms-FLAVOUR.txt, and before its windows the address ranges
# the plugin's inclusive counts need to /results/sendpath-ranges.txt (the
# flavour's Send-path functions, as scripts/profile_report.py defines them,
# the entry text, __switch_to_asm). The counts themselves are written by the
# plugin, outside the guest.
. /work/tests/vm/guest/lib.sh

n=$1
shift
MARK=/work/build/profile/mark
[ -x $MARK ] || { fail "no $MARK"; exit 1; }
sysctl -q kernel.kptr_restrict=0
export EXPORT
setup_fabric
mkdir -p $EXPORT/d300
for i in $(seq 1 300); do : >"$EXPORT/d300/an-entry-with-a-rather-long-name-number-$i"; done
# The root's listing is too large for an inline reply: err_chunk's READDIR
# of it, offered no Reply chunk, is answered with ERR_CHUNK.
for i in $(seq 1 300); do : >"$EXPORT/entry-with-a-long-name-$i"; done
head -c 1048576 /dev/urandom >$EXPORT/data.bin
window=0
started=
warmed=

# sendpath_ranges FLAVOUR BUILD_DIR: the plugin's ranges file (insn_profile.c)
# from the kernel's text symbols: "S lo hi" per Send-path function (a symbol
# of rpcrdma named in the build's symbol lists, and for rust the kernel's
# rust_helper_*), "E lo hi" the entry text, "W lo hi" __switch_to_asm,
# "I a a" each entry point of an interrupt, exception or system call, "Q lo
# hi" the interrupt stubs (each starts with a push), "T a a" each batch
# function (see below); a symbol ends where the next begins.
sendpath_ranges() {
	cat "$2/sendpath-symbols.txt" "$2/shim-symbols.txt" >/tmp/sendpath-names 2>/dev/null || true
	sort "/results/kallsyms-$1.txt" |
		awk -v flavour="$1" '
		FNR == NR { names[$1] = 1; next }
		{
			if (open != "") { print open, start, $1; open = "" }
			if (($4 == "[rpcrdma]" && ($3 in names)) ||
			    (flavour == "rust" && $4 == "" && $3 ~ /^rust_helper_/)) {
				open = "S"; start = $1
			} else if ($3 == "__switch_to_asm") {
				open = "W"; start = $1
			} else if ($3 == "irq_entries_start" || $3 == "spurious_entries_start") {
				open = "Q"; start = $1
			}
			if ($3 ~ /^(entry_SYSCALL_64|entry_SYSENTER_compat|entry_INT80_compat|entry_SYSCALL_compat|asm_exc_.*|asm_sysvec_.*|asm_common_interrupt|asm_spurious_interrupt)$/)
				print "I", $1, $1
			# Batch work: a wake-up, and the transfers of the allocators between
			# their per-CPU caches and their shared pools.
			if ($4 == "" && ($3 == "try_to_wake_up" || $3 == "free_pcppages_bulk" ||
			    $3 == "new_slab" || $3 == "free_slab")) print "T", $1, $1
			if ($3 == "__entry_text_start") estart = $1
			if ($3 == "__entry_text_end") eend = $1
		}
		END { if (estart != "" && eend != "") print "E", estart, eend }
		' /tmp/sendpath-names -
}

# run_class CLASS TARGET VERSION: one window of profile_load.py, recorded
# with its index; a window that was opened but failed is recorded as such
# (the plugin wrote it), so the indexes stay aligned.
run_class() {
	rc=0
	python3 /work/tests/vm/guest/profile_load.py $MARK "$1" "$2" "$n" || rc=$?
	case $rc in
	0) echo "$window $flavour $1 $3 $n" >>/results/profile-windows.txt ;;
	1) echo "$window $flavour $1 $3 failed" >>/results/profile-windows.txt ;;
	esac
	[ $rc -le 1 ] && window=$((window + 1))
	[ $rc = 0 ] || fail "$flavour: profile class $1 ($3)"
}

for spec in "$@"; do
	flavour=${spec%%:*}
	rs_module_dir=${spec#*:}
	load_rpcrdma "$flavour" || exit 1
	if [ -z "$started" ]; then
		start_nfsd || exit 1
		started=1
	else
		rpc.nfsd "${NFSD_THREADS:-8}"
		echo "rdma $RDMA_PORT" >/proc/fs/nfsd/portlist
	fi
	awk '$2 ~ /^[tT]$/' /proc/kallsyms >/results/kallsyms-$flavour.txt
	sendpath_ranges "$flavour" "/work/build/$rs_module_dir" >/results/sendpath-ranges.txt
	grep -q '^S ' /results/sendpath-ranges.txt || fail "$flavour: no Send-path ranges for the profiler"
	if [ -z "$warmed" ]; then
		# Unmeasured, once per boot before the first flavour's windows (no
		# markers: /bin/true opens none): the allocator's slabs and page
		# lists are then as warm for the first flavour as for the second.
		# Without it the first one's 64 KiB READs met slab refills and page
		# allocations that the second's did not (read_wchunk v3, inclusive
		# rust/c: 0.93 with c first, 1.14 with rust first).
		MOUNT_OPTS=actimeo=0 mount_rdma 3 /mnt/p3 || { fail "warm-up mount"; exit 1; }
		for cls in getattr pullup mapped read_wchunk readdir_rchunk write; do
			python3 /work/tests/vm/guest/profile_load.py /bin/true $cls /mnt/p3 "$n" >/dev/null ||
				fail "warm-up: $cls"
		done
		umount /mnt/p3
		warmed=1
	fi
	for vers in 3 4.1; do
		d=/mnt/p$(echo $vers | tr -d .)
		MOUNT_OPTS=actimeo=0 mount_rdma $vers $d || { fail "$flavour: NFSv$vers mount"; continue; }
		for cls in getattr pullup mapped read_wchunk readdir_rchunk write; do
			run_class $cls $d v$vers
		done
		umount $d
	done
	for cls in err_vers err_chunk; do
		run_class $cls $SERVER_IP:$RDMA_PORT raw
	done
	rpc.nfsd 0
	if unload_rpcrdma 30; then
		pass "profile $flavour: every class ran and rpcrdma unloaded"
	else
		fail "profile $flavour: rpcrdma does not unload"
		exit 1
	fi
done
result profile_windows "$window"
result failures $FAILS
exit $FAILS
