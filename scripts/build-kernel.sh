#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the test kernel into $CACHE/kbuild/<version>-<fragment hash>, out of
# tree so the extracted source stays pristine. Rebuilt only when the key
# changes or a previous build did not finish. Prints the build dir last.

. "$(dirname "$0")/lib.sh"

SRC=$(kernel_src)
B=$(kernel_build)
[ -f "$SRC/Makefile" ] || die "kernel source missing at $SRC: run scripts/setup.sh"
KMAKE=(make -C "$SRC" O="$B" LLVM="$LLVM_SUFFIX")

if [ -f "$B/.build-complete" ]; then
	say "test kernel: $B (cached)" >&2
	echo "$B"
	exit 0
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
say "test kernel: building with $(nproc) jobs (~10 min cold)" >&2
progress_logged kernel-build "${KMAKE[@]}" -j"$(nproc)" all >&2
touch "$B/.build-complete"
say "test kernel: $(cat "$B/include/config/kernel.release") in $B" >&2
echo "$B"
