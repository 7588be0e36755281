// SPDX-License-Identifier: GPL-2.0
/*
 * insn_profile.c - a QEMU TCG plugin that counts executed guest kernel
 * instructions per address, within windows the guest opens and closes.
 *
 * Every kernel instruction (address in the upper half) gets one counter,
 * shared by all translations of that address and incremented inline by the
 * translated code, so the count is exact per executed instruction, also
 * when a translation block is left early. The guest marks a window by
 * executing "mov $MAGIC, %eax" with one of two magic values (the marker
 * program, tests/profile/mark.c): at the opening one the plugin takes a
 * snapshot of every counter; at the closing one it writes, for window N,
 * OUT.N with "address count" for each instruction executed in between,
 * and a last line "total COUNT". Nothing is read from guest memory or
 * registers: the marker is recognised by its bytes at translation.
 *
 * The counters are plain 64-bit adds, so the plugin requires one TCG
 * thread (-accel tcg,thread=single, or -icount); scripts/profile.sh runs
 * QEMU so.
 *
 * Arguments: out=PREFIX (default "insn-profile").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_v1.h"
#include "mark.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

#define KERNEL_SPACE 0xffff800000000000ULL
#define SLOTS_PER_CHUNK 65536

/* One instruction address: its count, and the count when the window opened. */
struct slot {
	uint64_t vaddr;
	uint64_t count;
	uint64_t at_open;
};

/*
 * Slots live in chunks that never move (translated code holds pointers to
 * their counters); an open-addressing table finds the slot of an address.
 */
static struct slot **chunks;
static size_t nchunks, nslots;
static struct slot **table;
static size_t table_size;	/* a power of two */
static const char *out_prefix = "insn-profile";
static int window_open;
static unsigned int window_number;

static size_t hash(uint64_t vaddr)
{
	return (size_t)((vaddr * 0x9E3779B97F4A7C15ULL) >> 20) & (table_size - 1);
}

static void table_insert(struct slot *s)
{
	size_t i = hash(s->vaddr);

	while (table[i])
		i = (i + 1) & (table_size - 1);
	table[i] = s;
}

static void table_grow(void)
{
	struct slot **old = table;
	size_t old_size = table_size, i;

	table_size = old_size ? old_size * 2 : 1u << 20;
	table = calloc(table_size, sizeof(*table));
	if (!table) {
		fprintf(stderr, "insn_profile: out of memory\n");
		exit(1);
	}
	for (i = 0; i < old_size; i++)
		if (old[i])
			table_insert(old[i]);
	free(old);
}

static struct slot *slot_for(uint64_t vaddr)
{
	struct slot *s;
	size_t i;

	if (table_size) {
		for (i = hash(vaddr); table[i]; i = (i + 1) & (table_size - 1))
			if (table[i]->vaddr == vaddr)
				return table[i];
	}
	if (nslots % SLOTS_PER_CHUNK == 0) {
		struct slot **grown = realloc(chunks, (nchunks + 1) * sizeof(*chunks));

		if (!grown || !(grown[nchunks] = calloc(SLOTS_PER_CHUNK, sizeof(struct slot)))) {
			fprintf(stderr, "insn_profile: out of memory\n");
			exit(1);
		}
		chunks = grown;
		nchunks++;
	}
	s = &chunks[nchunks - 1][nslots % SLOTS_PER_CHUNK];
	nslots++;
	s->vaddr = vaddr;
	/* A new address counts from the snapshot of an open window too. */
	if (nslots * 2 > table_size)
		table_grow();
	table_insert(s);
	return s;
}

#define EACH_SLOT(s, i) \
	for (i = 0; i < nslots && (s = &chunks[i / SLOTS_PER_CHUNK][i % SLOTS_PER_CHUNK]); i++)

static void window_start(void)
{
	struct slot *s;
	size_t i;

	EACH_SLOT(s, i)
		s->at_open = s->count;
	window_open = 1;
}

static void window_end(void)
{
	char path[4096];
	uint64_t total = 0;
	struct slot *s;
	size_t i;
	FILE *f;

	snprintf(path, sizeof(path), "%s.%u", out_prefix, window_number);
	f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "insn_profile: cannot write %s\n", path);
		exit(1);
	}
	EACH_SLOT(s, i) {
		uint64_t n = s->count - s->at_open;

		if (n) {
			fprintf(f, "%llx %llu\n", (unsigned long long)s->vaddr,
				(unsigned long long)n);
			total += n;
		}
	}
	fprintf(f, "total %llu\n", (unsigned long long)total);
	fclose(f);
	window_number++;
	window_open = 0;
}

static void on_marker(unsigned int vcpu, void *kind)
{
	(void)vcpu;
	if ((uintptr_t)kind == PROFILE_MARK_OPEN && !window_open)
		window_start();
	else if ((uintptr_t)kind == PROFILE_MARK_CLOSE && window_open)
		window_end();
}

/* The magic value of a "mov $imm32, %eax" marker, or 0. */
static uint32_t marker_of(const struct qemu_plugin_insn *insn)
{
	const unsigned char *b = qemu_plugin_insn_data(insn);
	uint32_t imm;

	if (qemu_plugin_insn_size(insn) != 5 || b[0] != 0xB8)
		return 0;
	imm = b[1] | b[2] << 8 | b[3] << 16 | (uint32_t)b[4] << 24;
	return imm == PROFILE_MARK_OPEN || imm == PROFILE_MARK_CLOSE ? imm : 0;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
		uint32_t mark;

		if (vaddr >= KERNEL_SPACE) {
			qemu_plugin_register_vcpu_insn_exec_inline(insn,
				QEMU_PLUGIN_INLINE_ADD_U64, &slot_for(vaddr)->count, 1);
		} else if ((mark = marker_of(insn))) {
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker,
				QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)mark);
		}
	}
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			out_prefix = argv[i] + 4;
		} else {
			fprintf(stderr, "insn_profile: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	table_grow();
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	return 0;
}
