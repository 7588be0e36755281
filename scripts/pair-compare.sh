#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# pair-compare.sh: runs scripts/vm-pair.sh for the c and the rust flavour
# and compares the server's reply headers as Wireshark decoded them: how
# many replies of each shape (rdma_proc, Write list chunks, Reply chunk)
# each flavour sent for the same client workload.

. "$(dirname "$0")/lib.sh"

declare -A dir
rc=0
for f in c rust; do
	runs=$(bash "$TOP/scripts/vm-pair.sh" "$f" 8) || rc=1
	dir[$f]=${runs%% *}
done
shape() { awk -F, '$2 == "10.11.0.1" { print "proc=" $4 " writes=" $5 " reply=" $6 }' "$1/rpcordma.csv" | sort | uniq -c; }
echo "reply header shapes (count, as decoded by tshark's rpcordma dissector):"
join -1 2 -2 2 -a1 -a2 -e 0 -o 0,1.1,2.1 \
	<(shape "${dir[c]}" | awk '{ print $1, $2"_"$3"_"$4 }' | sort -k2) \
	<(shape "${dir[rust]}" | awk '{ print $1, $2"_"$3"_"$4 }' | sort -k2) |
	awk 'BEGIN { printf "    %-28s %6s %6s\n", "shape", "c", "rust" } { printf "    %-28s %6s %6s\n", $1, $2, $3 }'
for f in c rust; do
	echo "$f: $(grep -E '^wire_(server_replies|malformed)=' "${dir[$f]}/summary" | tr '\n' ' ') (${dir[$f]})"
done
exit $rc
