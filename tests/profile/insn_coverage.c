// SPDX-License-Identifier: GPL-2.0
/*
 * insn_coverage.c - a QEMU TCG plugin that records which guest kernel
 * instructions were executed at least once (machine-code coverage).
 *
 * Every kernel instruction (address in the upper half) gets one counter,
 * shared by all translations of that address, which the translated code
 * increments inline. Unlike the profiler (insn_profile.c) this plugin
 * works with multi-threaded TCG (the default -accel tcg): translation may
 * run on several vCPU threads at once, so the table of counters is
 * guarded by a mutex (taken only at translation), and the inline adds of
 * two vCPUs may race; a lost increment does not matter, only whether a
 * counter is zero or not. At exit it writes out=PATH (default
 * "insn-coverage.txt"): one hex address per line for each kernel
 * instruction executed at least once, in no particular order.
 * scripts/coverage.sh runs it; scripts/coverage_report.py maps the
 * addresses back to functions.
 *
 * Arguments: out=PATH; from=HEX, the lowest address recorded (default the
 * kernel half; 0xffffffffa0000000, x86-64's module space and above, makes
 * the core kernel run uninstrumented, for runs that only need modules).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_v1.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

#define KERNEL_SPACE 0xffff800000000000ULL
#define SLOTS_PER_CHUNK 65536

/* One instruction address and its execution count. */
struct slot {
	uint64_t vaddr;
	uint64_t count;
};

/*
 * Slots live in chunks that never move (translated code holds pointers to
 * their counters); an open-addressing table finds the slot of an address.
 */
static struct slot **chunks;
static size_t nchunks, nslots;
static struct slot **table;
static size_t table_size;	/* a power of two */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *out_path = "insn-coverage.txt";
static uint64_t from = KERNEL_SPACE;

static void *alloc_or_die(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "insn_coverage: out of memory\n");
		exit(1);
	}
	return p;
}

/* The home of key in a power-of-two table of size entries. */
static size_t hash(uint64_t key, size_t size)
{
	return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 20) & (size - 1);
}

static void table_insert(struct slot *s)
{
	size_t i = hash(s->vaddr, table_size);

	while (table[i])
		i = (i + 1) & (table_size - 1);
	table[i] = s;
}

static void table_grow(void)
{
	struct slot **old = table;
	size_t old_size = table_size, i;

	table_size = old_size ? old_size * 2 : 1u << 20;
	table = alloc_or_die(table_size, sizeof(*table));
	for (i = 0; i < old_size; i++)
		if (old[i])
			table_insert(old[i]);
	free(old);
}

/* The slot of vaddr, made on first sight. Called with lock held. */
static struct slot *slot_for(uint64_t vaddr)
{
	struct slot *s;
	size_t i;

	for (i = hash(vaddr, table_size); table[i]; i = (i + 1) & (table_size - 1))
		if (table[i]->vaddr == vaddr)
			return table[i];
	if (nslots % SLOTS_PER_CHUNK == 0) {
		struct slot **grown = realloc(chunks, (nchunks + 1) * sizeof(*chunks));

		if (!grown) {
			fprintf(stderr, "insn_coverage: out of memory\n");
			exit(1);
		}
		chunks = grown;
		chunks[nchunks++] = alloc_or_die(SLOTS_PER_CHUNK, sizeof(struct slot));
	}
	s = &chunks[nchunks - 1][nslots % SLOTS_PER_CHUNK];
	nslots++;
	s->vaddr = vaddr;
	if (nslots * 2 > table_size)
		table_grow();
	table_insert(s);
	return s;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	pthread_mutex_lock(&lock);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t vaddr = qemu_plugin_insn_vaddr(insn);

		if (vaddr >= from)
			qemu_plugin_register_vcpu_insn_exec_inline(insn,
				QEMU_PLUGIN_INLINE_ADD_U64, &slot_for(vaddr)->count, 1);
	}
	pthread_mutex_unlock(&lock);
}

static void write_coverage(qemu_plugin_id_t id, void *udata)
{
	size_t i, written = 0;
	FILE *f;

	(void)id;
	(void)udata;
	pthread_mutex_lock(&lock);
	f = fopen(out_path, "w");
	if (!f) {
		fprintf(stderr, "insn_coverage: cannot write %s\n", out_path);
		pthread_mutex_unlock(&lock);
		return;
	}
	for (i = 0; i < nslots; i++) {
		const struct slot *s = &chunks[i / SLOTS_PER_CHUNK][i % SLOTS_PER_CHUNK];

		if (__atomic_load_n(&s->count, __ATOMIC_RELAXED)) {
			fprintf(f, "%llx\n", (unsigned long long)s->vaddr);
			written++;
		}
	}
	if (fclose(f))
		fprintf(stderr, "insn_coverage: error writing %s\n", out_path);
	else
		fprintf(stderr, "insn_coverage: %zu kernel instructions executed (%zu translated), in %s\n",
			written, nslots, out_path);
	pthread_mutex_unlock(&lock);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4) && argv[i][4]) {
			out_path = argv[i] + 4;
		} else if (!strncmp(argv[i], "from=", 5)) {
			char *end;

			from = strtoull(argv[i] + 5, &end, 16);
			if (*end || from < KERNEL_SPACE) {
				fprintf(stderr, "insn_coverage: from= takes a kernel address in hex\n");
				return -1;
			}
		} else {
			fprintf(stderr, "insn_coverage: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	table_grow();
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, write_coverage, NULL);
	return 0;
}
