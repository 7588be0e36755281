# SPDX-License-Identifier: GPL-2.0
#
# Top-level entry points. `make demo` and `make check` do all set-up
# themselves (root, Debian 12); everything downloaded or built goes to the
# cache ($(RPCRDMA_CACHE), default ~/.cache/rpcrdma-rs), safe to delete.
#
# To build against your own Rust-enabled 7.3 kernel tree, or a
# distribution's headers (/lib/modules/RELEASE/build, with its source
# package installed):
#   make modules KDIR=/path/to/build [KSRC=/path/to/source]

SHELL := /bin/bash
export KDIR KSRC RPCRDMA_CACHE
# Command-line variables such as the CC=clang LD=ld.lld that DKMS adds must
# not reach the kernel's make: the module is built with the toolchain the
# kernel's own .config names (scripts/kernel-toolchain.sh).
MAKEOVERRIDES :=

.PHONY: all demo check setup kernel rootfs modules module-c module-rust \
	host-test kunit e2e conformance hostile stress faults failfunc dma-mutations read-sink storm debian check-debug check-iommu pair bench profile coverage lint check-intree series series-check install uninstall clean cache-clean help

all: modules

help:
	@echo "make demo     build what is missing, boot a VM, serve NFS over RDMA with our rpcrdma.ko"
	@echo "make check    all tests; ends with 'N passed, N failed'"
	@echo "make modules  build/{c,rust}/rpcrdma.ko (KDIR=, KSRC= for your own kernel tree)"
	@echo "make host-test | kunit | e2e | conformance   one test phase"
	@echo "make lint     rustfmt, checkpatch, kernel-doc, clippy"
	@echo "make check-debug     reliability suites on a KASAN/lockdep/kmemleak kernel"
	@echo "make check-iommu     DMA-mapped phases behind an emulated IOMMU (strict)"
	@echo "make check-intree   the series applied with git am to v7.3.4, built, our suites run by kunit.py"
	@echo "make series  the generic abstractions as an RFC patch series against v7.3.4 (OUT=dir)"
	@echo "make series-check   build that series patch by patch, then kunit.py in the patched tree"
	@echo "make conformance  two-VM conformance suite, both flavours, wire-checked with tshark"
	@echo "make bench    instruction profile per reply class, then the end-to-end A/B"
	@echo "make profile  the instruction profile alone (N=RPCs per class, RUNS=boots)"
	@echo "make coverage machine-code coverage of the Send path, both flavours (FLOOR=PCT for rust)"
	@echo "make debian   the Debian package (apt install ./deb, DKMS) on Debian's kernel, serving with ours and its own"
	@echo "make install | uninstall   ours into /lib/modules/KVER/updates/ (KDIR=), or out again"
	@echo "make clean    remove build outputs in the repo; make cache-clean removes the cache"

demo:
	@scripts/demo.sh

check:
	@scripts/check.sh

setup:
	@scripts/setup.sh

kernel: setup
	@scripts/build-kernel.sh >/dev/null

rootfs: setup
	@scripts/mkrootfs.sh >/dev/null

# Without KDIR the modules are built against the cached test kernel.
modules: module-c module-rust
module-c module-rust: $(if $(KDIR),,kernel)
	@scripts/build-module.sh $(patsubst module-%,%,$@)

host-test:
	@scripts/check.sh host

# The series (make series) applied with git am to a clean v7.3.4 branch,
# built incrementally from the test kernel's objects, our KUnit suites and
# the abstractions' doctests run by the kernel's kunit.py. Part of `make
# check` (the intree phase).
check-intree: setup
	@scripts/check.sh intree

# The in-tree form (Documentation/intree.rst): git format-patch of the
# generic abstractions of src/rust/ against a git tree of the kernel source.
series: setup
	@scripts/series.sh $(OUT)

series-check: series
	@scripts/series-check.sh

# rustfmt, checkpatch --strict, kernel-doc, Python syntax, CLIPPY=1 build.
lint: $(if $(KDIR),,kernel)
	@scripts/lint.sh

kunit:
	@scripts/check.sh kunit

e2e:
	@scripts/check.sh e2e

# Two VMs (server, client) on a QEMU socket network drive every Send-path
# branch; RoCEv2 captured and checked with Wireshark's RPC-over-RDMA
# dissector; both flavours compared. Part of `make check`.
conformance:
	@scripts/check.sh conformance

pair: conformance

# Malformed and adversarial Calls from a pyverbs client (rust asserted, c
# compared). Part of `make check`, there without the c run (COMPARE=0).
hostile:
	@scripts/check.sh hostile

# Send Queue exhaustion and load/unload cycles. Part of `make check`.
stress:
	@scripts/check.sh stress

# Fault injection (RPCRDMA_RS_FAULT_INJECTION=y build). Part of `make check`.
faults:
	@scripts/check.sh faults

# The production build's error paths under the kernel's function error
# injection and failslab (tests/vm/guest/failfunc.sh, failslab.sh).
failfunc:
	@scripts/check.sh failfunc

# The DMA-mapped test mode against rust builds with a deliberate DMA-API
# misuse (Documentation/testing.rst lists them and what catches each):
# make check runs every one, some behind the IOMMU; this target runs them
# all through swiotlb.
dma-mutations:
	@scripts/check.sh dma-mutations all

# The module fixes (scripts/module-patches/): both flavours with and
# without them, NFS WRITEs in Read chunks verified byte for byte in the
# DMA-mapped mode (0001), then the rdma_stat counters read byte by byte
# (0002). Part of `make check`.
read-sink:
	@scripts/check.sh read-sink

# Disconnect storm (rxe device deleted and re-added under load; in the
# middle cycle the NIC's PCI function removed and found again); make check
# runs 6 cycles, this target CYCLES (default 10).
storm:
	@scripts/check.sh storm $(CYCLES)

# Debian's stock 7.3 kernel: the Debian package (debian/) built, linted and
# installed with apt in a trixie system, DKMS building it for Debian's
# kernels (and skipping other series), the toolchain refusals, autopkgtest,
# VMs booting Debian's vmlinuz with ours and with Debian's own rpcrdma.ko,
# remove/reinstall/purge. Part of `make check`, there without Debian's own
# module through the hostile suite (COMPARE=0).
debian:
	@scripts/check.sh debian

# The reliability suites on a debug kernel (KASAN, lockdep, kmemleak, UBSAN,
# DEBUG_LIST, ...): a second kernel build, so not part of `make check`.
check-debug:
	@scripts/check.sh debug

# The DMA-mapped phases with the server's NIC behind QEMU's emulated Intel
# IOMMU (strict) instead of swiotlb, on the test kernel (ACPI, the IOMMU);
# `make check` runs some of them that way (Documentation/testing.rst).
check-iommu:
	@scripts/check.sh iommu

# Benchmarks of the two flavours: first the instruction-exact profile of the
# Send path per reply class (scripts/profile.sh, about 7 minutes), then the
# end-to-end A/B under TCG (about 15 minutes).
bench:
	@scripts/profile.sh
	@scripts/bench.sh

# The instruction profile alone: make profile [N=RPCS] [RUNS=BOOTS].
profile:
	@scripts/profile.sh $(or $(N),200) $(or $(RUNS),2)

# Machine-code coverage of the Send path, both flavours side by side:
# debuginfo builds of the production flavours, the smoke, teardown, stress,
# hostile, failfunc/failslab (rust) and conformance workloads under a TCG
# plugin recording every executed module instruction; instructions executed
# per function and the never-executed blocks with their source lines and
# reasons (scripts/coverage.sh, ~30 min). `make check` measures rust over
# its own runs and asserts the floor. make coverage [FLOOR=PCT].
coverage:
	@COVERAGE_FLOOR=$(FLOOR) scripts/coverage.sh

# Install build/rust/rpcrdma.ko into /lib/modules/KVER/updates/ (KDIR= for
# the target kernel, INSTALL_MOD_PATH= for a staging root), or remove it.
install uninstall: KDIR ?= /lib/modules/$(shell uname -r)/build
install:
	@scripts/build-module.sh rust && scripts/install.sh install

uninstall:
	@scripts/install.sh uninstall

clean:
	rm -rf build build-debug build-iommu tests/host/target

cache-clean:
	rm -rf "$${RPCRDMA_CACHE:-$${XDG_CACHE_HOME:-$$HOME/.cache}/rpcrdma-rs}"
