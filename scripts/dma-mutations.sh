#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# dma-mutations.sh [--build-only] [MUTATION...]: proof that the DMA-mapped test mode
# catches what it is for. For each MUTATION (default: all ten), the rust
# flavour is built with that one deliberate DMA-API misuse
# (RPCRDMA_RS_DMA_MUTATION, see Kbuild) and run through
# tests/vm/guest/dma-mutant.sh in the DMA-mapped mode (vm-run.sh -D). Each
# mutation must be caught the way it should be, or the run FAILs:
#   skip_header_sync  the header never synced for the device: at the post
#                     the driver finds the bounce slot holding other bytes
#                     than the memory, and warns with the first byte that
#                     differs (the client then gets the stale bytes as
#                     reply headers, its xprtrdma_reply_*_err events)
#   leak_on_error     one payload mapping left mapped when a mapping failure
#                     releases the ctxt (dma_map faults injected, so the
#                     build has RPCRDMA_RS_FAULT_INJECTION=y too): the
#                     device's DMA mappings do not come back to their
#                     number at start
#   leak_on_post_error the same leak when ib_post_send fails (post faults
#                     injected): only that error path forgets to unmap,
#                     the others unmap as they should
#   unmap_wrong_len   a payload fragment unmapped one byte short: DMA-API
#                     debugging reports the size mismatch
#   double_unmap      a payload fragment unmapped twice: DMA-API debugging
#                     reports the second unmap of memory it has no mapping of
#   sync_after_post   the header synced after the post: at the post the
#                     slot still holds the last reply's bytes, which the
#                     driver's check there finds (rxe's sum at its first
#                     read also sees the data change)
#   unmap_in_flight   a reply's first payload fragment unmapped before its
#                     Send is posted (and not at release): the device
#                     reads through an address no longer mapped, which
#                     the driver refuses with a warning (a freed swiotlb
#                     slot; behind the IOMMU, an IOVA with no page)
#   reuse_in_flight   behind the IOMMU: a reply's first payload fragment
#                     unmapped right after its Send is posted, before the
#                     device reads it, and the same memory mapped again at
#                     once, which the IOMMU's allocator gives the IOVA just
#                     freed: the device reads the right bytes through a
#                     live mapping, and only the generation the driver
#                     recorded at the post (kernel-patches/0004, DMA-API
#                     debugging's mappings) tells it from the one posted
#   wrong_direction   payload pages mapped and unmapped DMA_FROM_DEVICE, as
#                     if for the device to write: the driver refuses the
#                     device's read against the mapping's direction, with
#                     a warning naming the mapping (the test kernels'
#                     swiotlb tags each slot with its mapping's direction).
#                     DMA-API debugging sees only the kvec fragments, mapped
#                     DMA_TO_DEVICE with the headers and unmapped with the
#                     pages' direction; a driver consistent in its error
#                     would give it nothing to report
#   sge_overrun       a Send's first payload SGE posted one byte longer than
#                     its mapping: the driver refuses the device's read past
#                     the mapping's end, to the byte (the slot it ends in
#                     is the mapping's own, so a slot-level check passes)
#   short_sync        the header synced for the device without its last 8
#                     bytes: at the post the driver finds the bounce slot
#                     holding other bytes than the memory, and warns with
#                     the first byte that differs (rxe and siw alike)
# A mutation whose run lib.sh's iommu_for names ("mutation-NAME") runs
# behind the emulated IOMMU instead of swiotlb (make check: the five that
# need no bouncing; make check-iommu: all it runs), and its guest must
# prove that mode.
# Prints PASS:/FAIL: lines (a mutation caught is a PASS) and exits non-zero
# on any FAIL. --build-only builds the mutants and runs nothing (make check
# builds them in the background beforehand).

. "$(dirname "$0")/lib.sh"

BUILD_ONLY=0
[ "${1:-}" = --build-only ] && { BUILD_ONLY=1; shift; }
MUTATIONS=("$@")
ALL=(skip_header_sync leak_on_error leak_on_post_error unmap_wrong_len double_unmap sync_after_post unmap_in_flight reuse_in_flight wrong_direction short_sync sge_overrun)
[ ${#MUTATIONS[@]} -gt 0 ] || MUTATIONS=(all)
[ "${MUTATIONS[0]}" = all ] && MUTATIONS=("${ALL[@]}")
SECONDS_PER_RUN=${DMA_MUTANT_SECONDS:-15}
FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
value() { sed -n "s/^$2=//p" "$1/summary" 2>/dev/null | tail -n 1; }
# refused_as REGEX WHAT: the mutation is caught if the run's console has
# the driver's refusal REGEX matches (quoted in the PASS line).
refused_as() {
	local refusal
	refusal=$(grep -m 1 -oE "$1" "$run/console.log" || true)
	if [ -n "$refusal" ]; then
		pass "dma mutation $m caught: $2 was refused ($refusal)"
	else
		fail "dma mutation $m not caught: no refusal of $2 in the console, $io ($run)"
	fi
}

for m in "${MUTATIONS[@]}"; do
	args="RPCRDMA_RS_DMA_MUTATION=$m"
	# The faults that take a leaking mutant down its error path, set once
	# the client has mounted: three in ten mappings of reply fragments fail,
	# at random, so that some fail after others of the same reply were
	# mapped (a fixed interval falls on the same fragment of every reply);
	# or the posts of the first three replies whose Send carries mapped
	# payload fail (each closes the connection, so few; a reply without
	# payload has nothing to leak, and a random fifth of all posts, six
	# times, once hit none: 2026-12-05).
	faults=-
	case $m in
	leak_on_error) faults=fail_dma_map=1,30,0,40 ;;
	leak_on_post_error) faults=fail_post_mapped=1,100,0,3 ;;
	esac
	[ "$faults" = - ] || args="$args RPCRDMA_RS_FAULT_INJECTION=y"
	dir=rust-mut-$m
	if ! MODULE_MAKE_ARGS="$args" bash "$TOP/scripts/build-module.sh" rust "$dir" >/dev/null 2>&1; then
		fail "dma mutation $m: the mutant does not build ($LOGS/module-$dir.log)"
		continue
	fi
	[ "$BUILD_ONLY" = 1 ] && continue
	rc=0
	# reuse_in_flight on one vCPU: the device's thread then cannot read
	# between the post and the mutant's unmap and map (the shim).
	# It needs the IOMMU's reuse of an IOVA: behind it always, whatever
	# IOMMU_RUNS says (make dma-mutations runs the others in swiotlb).
	cpus=2 iommu=$(iommu_for "mutation-$m")
	[ "$m" = reuse_in_flight ] && cpus=1 iommu=1 && IOMMU_RUNS="${IOMMU_RUNS:-} mutation-$m"
	run=$(DMA_IOMMU=$iommu bash "$TOP/scripts/vm-run.sh" -D -c "$cpus" -t 600 -n "dma-mutant-$m" \
		dma-mutant "$dir" "$SECONDS_PER_RUN" "$faults") || rc=$?
	if [ "$rc" = 124 ] || [ ! -f "$run/summary" ]; then
		fail "dma mutation $m: the run did not finish (status $rc, $run/console.log)"
		continue
	fi
	if ! mode=$(dma_mode_check "$run" "mutation-$m"); then
		fail "dma mutation $m: its guest $mode ($run)"
		continue
	fi
	bad=$(value "$run" client_bad_replies) errors=$(value "$run" dma_api_errors)
	start=$(value "$run" dma_mappings_rxe0_start) end=$(value "$run" dma_mappings_rxe0_end)
	io="mount_ok=$(value "$run" mount_ok) io_ok=$(value "$run" io_ok) data_ok=$(value "$run" data_ok)"
	reports=$(grep -cE 'WARNING:|DMA-API:' "$run/console.log" || true)
	echo "    $m ($mode): $io client_bad_replies=$bad dma_api_errors=$errors mappings ${start:-?} -> ${end:-?}" \
		"kernel reports=$reports (status $rc, $run)"
	grep -m 3 -E 'DMA-API: ' "$run/console.log" | sed 's/^/      /' || true
	# The drivers' check at the post (ib_sw_dma_check_visible(),
	# kernel-patches/0002): the bytes the device would read are not those
	# of the memory.
	unsynced=$(grep -m 1 -oE 'posted [0-9]+ bytes at DMA address [^:]*: from byte [0-9]+ the device reads other bytes than the memory holds' "$run/console.log" || true)
	case $m in
	skip_header_sync | short_sync)
		if [ -n "$unsynced" ]; then
			pass "dma mutation $m caught: at the post the device would read unsynced bytes ($unsynced); the client got ${bad:-?} replies with stale headers"
		else
			fail "dma mutation $m not caught: no unsynced bytes found at a post, client_bad_replies=${bad:-?} $io ($run)"
		fi ;;
	leak_on_error | leak_on_post_error)
		point=${faults%%=*}
		injected=$(value "$run" "injected_$point")
		if [ -n "$end" ] && [ "$end" -gt "${start:-0}" ] && grep -q '^FAIL: .*DMA mappings of rxe0' "$run/guest.log"; then
			pass "dma mutation $m caught: $((end - start)) DMA mappings left after the server stopped (${injected:-?} $point faults injected)"
		else
			fail "dma mutation $m not caught: mappings ${start:-?} -> ${end:-?}, ${injected:-?} $point faults injected ($run)"
		fi ;;
	double_unmap | unmap_wrong_len)
		# DMA-API debugging's report of each (kernel/dma/debug.c).
		if [ "$m" = double_unmap ]; then
			report='has not allocated' what='the unmap of memory it had no mapping of'
		else
			report='different size' what='the unmap of another size'
		fi
		if grep -q "DMA-API: .*$report" "$run/console.log" && [ "${errors:-0}" -gt 0 ]; then
			pass "dma mutation $m caught: DMA-API debugging reported $what ($errors errors)"
		else
			fail "dma mutation $m not caught: dma_api_errors=${errors:-?}, no report of $what ($run/console.log)"
		fi ;;
	unmap_in_flight)
		# The drivers' refusal (include/rdma/ib_sw_dma.h, kernel-patches).
		refusal=$(grep -m 1 -oE 'access to [0-9]+ bytes at DMA address [^,]*, not mapped[^W]*' "$run/console.log" || true)
		if [ -n "$refusal" ] && [ "$(value "$run" io_ok)$(value "$run" data_ok)" != 11 ]; then
			pass "dma mutation $m caught: the device's read after the unmap was refused ($refusal); I/O failed"
		else
			fail "dma mutation $m not caught: no refused access in the console, $io ($run)"
		fi ;;
	sync_after_post)
		# At the post the header's slot still holds the last reply's bytes;
		# rxe's sum at its first read also finds them changed by the late sync.
		changed=no
		grep -q 'changed before the device read it' "$run/console.log" && changed=yes
		if [ -n "$unsynced" ]; then
			pass "dma mutation $m caught: at the post the device would read unsynced bytes ($unsynced); rxe's sum found the data changed before its first read: $changed; client_bad_replies=${bad:-?}"
		else
			fail "dma mutation $m not caught: no unsynced bytes found at a post (rxe's changed-data warning: $changed), client_bad_replies=${bad:-?} $io ($run)"
		fi ;;
	reuse_in_flight)
		# The drivers' check of the generation recorded at the post
		# (ib_sw_dma_stamp_check(), kernel-patches/0004): the address
		# mapped again, to the same memory, is another mapping.
		# (The mutant's own line is KERN_INFO, below the console's level:
		# the guest's dmesg.log has it.)
		reused=$(cat "$run/dmesg.log" "$run/console.log" 2>/dev/null | grep -m 1 -oE "mutation reuse_in_flight: .*came back for the same memory.*" || true)
		stamp=$(grep -m 1 -oE 'DMA address [^ ]* was posted in a mapping of memory at [^ ]* \(generation [0-9]+\), unmapped before the device read it; it now maps [^ ]* \(generation [1-9][0-9]*\)' "$run/console.log" || true)
		if [ -z "$reused" ]; then
			fail "dma mutation $m not exercised: $(cat "$run/dmesg.log" "$run/console.log" 2>/dev/null | grep -m 1 -oE 'mutation reuse_in_flight: .*' || echo "no report of the mutation") ($mode; it needs the IOMMU: lib.sh iommu_for mutation-$m) ($run)"
		elif [ -z "$stamp" ]; then
			fail "dma mutation $m not caught: a posted fragment's DMA address came back for the same memory, and no read through a mapping other than the one posted was reported, $io ($run)"
		else
			pass "dma mutation $m caught: the posted fragment's IOVA came back for the same memory, and the device's first read was reported as a use after unmap, by generation ($stamp)"
		fi ;;
	wrong_direction)
		# The drivers' direction check (include/rdma/ib_sw_dma.h, kernel-patches/0002).
		refused_as 'device read of [0-9]+ bytes at DMA address [^,]*, mapped DMA_FROM_DEVICE \([^)]*\)' \
			"the device's read against the mapping's direction (DMA-API debugging: ${errors:-?} errors)" ;;
	sge_overrun)
		# The drivers' check of the mapping's end (ib_sw_dma_reachable()).
		refused_as 'access to [0-9]+ bytes at DMA address [^,]*, [0-9]+ past the end of its mapping( \([^)]*\))?' \
			"the device's read past the mapping's end" ;;
	*) fail "dma mutation $m: no verdict for it in this script" ;;
	esac
done
[ "$FAILS" = 0 ]
