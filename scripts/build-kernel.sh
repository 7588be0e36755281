#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the test kernel into build-<version>-<hash of the config fragments
# and kernel patches> inside the (patched, hard-link copy of the) source it
# is built from (lib.sh kernel_build): O= a subdirectory, so Kbuild's
# command lines name the source "..", and scripts/series-check.sh can build
# the series' kernels from a copy of this one incrementally. The source files
# stay untouched. Rebuilt only when the key changes or a previous build did
# not finish.
# Prints the build dir last.

. "$(dirname "$0")/lib.sh"

PRISTINE=$(kernel_src)
SRC=$(kernel_build_src)
B=$(kernel_build)
[ -f "$PRISTINE/Makefile" ] || die "kernel source missing at $PRISTINE: run scripts/setup.sh"
KMAKE=(make -C "$SRC" O="$B" LLVM="$LLVM_SUFFIX")

# Builds of the earlier layout ($CACHE/kbuild/<version>-<key>, outside the
# source) are used by nothing now.
if [ -d "$CACHE/kbuild" ]; then
	say "test kernel: removing $CACHE/kbuild (the earlier layout's builds)" >&2
	rm -rf "$CACHE/kbuild"
fi

if [ -f "$B/.build-complete" ]; then
	say "test kernel: $B (cached)" >&2
	echo "$B"
	exit 0
fi

# The tree the kernels are built from: the pristine source plus
# scripts/kernel-patches, as a hard-link copy (patch replaces the files it
# changes, so the links to the pristine tree of those files break).
if [ "$SRC" != "$PRISTINE" ] && [ ! -f "$SRC/.patches-applied" ]; then
	say "test kernel: patching a copy of the source ($(kernel_patches | xargs -n1 basename | tr '\n' ' '))" >&2
	rm -rf "$SRC.tmp"
	cp -al "$PRISTINE" "$SRC.tmp"
	for p in $(kernel_patches); do
		patch -d "$SRC.tmp" -p1 --no-backup-if-mismatch -s <"$p" >&2 || die "kernel patch $p does not apply"
	done
	touch "$SRC.tmp/.patches-applied"
	mv "$SRC.tmp" "$SRC"
fi

say "test kernel: configuring $B" >&2
mkdir -p "$B"
{
	run_logged kernel-config-tiny "${KMAKE[@]}" tinyconfig
	run_logged kernel-config-merge "$SRC/scripts/kconfig/merge_config.sh" -m -O "$B" \
		"$B/.config" $(config_fragments)
	run_logged kernel-config-old "${KMAKE[@]}" olddefconfig
} >&2

# merge_config only warns when a symbol does not take: fail here instead.
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		grep -qx "$line" "$B/.config" || { warn "config: wanted $line, got: $(grep "^${line%%=*}=" "$B/.config" || echo unset)"; bad=1; } ;;
	"# CONFIG_"*" is not set")
		sym=${line#\# }; sym=${sym%% *}
		grep -q "^$sym=[ym]" "$B/.config" && { warn "config: wanted $sym unset"; bad=1; } ;;
	esac
done < <(config_fragments | xargs cat)
[ $bad = 0 ] || die "test kernel config does not match $(config_fragments | xargs -n1 basename | tr '\n' ' ')(see above)"

run_logged kernel-rustavailable "${KMAKE[@]}" rustavailable >&2
say "test kernel: building with $(nproc) jobs (measured 17-41 min on 2 cores, once per config)" >&2
progress_logged kernel-build "${KMAKE[@]}" -j"$(nproc)" all >&2
touch "$B/.build-complete"
say "test kernel: $(cat "$B/include/config/kernel.release") in $B" >&2
echo "$B"
