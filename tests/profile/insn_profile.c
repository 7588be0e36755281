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
 * OUT.N with "address count incl batch" for each instruction executed in
 * between, and a last line "total COUNT". Nothing is read from guest
 * memory or registers: the marker is recognised by its bytes at
 * translation, and the shadow stacks below use only instruction bytes and
 * the addresses that two instructions of __switch_to_asm access.
 *
 * Inclusive counts. While a window is open, each kernel instruction also
 * runs a callback that keeps, per vCPU, a shadow stack of the frames that
 * call instructions push and ret instructions pop, each frame marked
 * "inside" when a call in Send-path code, or in a frame already inside,
 * pushed it. An instruction is counted a second time (the window file's
 * third column) when it is Send-path code or runs in an inside frame: what
 * the Send path executes itself and in everything it calls. A jump out of
 * Send-path code (a tail call) makes the current frame inside until it
 * returns. Interrupts, exceptions and system calls are not counted: where
 * they land (an entry point, or an interrupt stub's push) reached from
 * outside the entry text pushes a barrier frame, not inside, which iret or
 * sysret pops. A task switch saves the outgoing task's stack under the
 * address where __switch_to_asm stores its stack pointer and restores the
 * incoming task's from the address it loads it from (a task not seen in
 * the window starts empty). What runs from a batch function on (wake-ups,
 * the allocators' batch transfers: "T" below) is counted apart as well
 * (fourth column): its cost follows the scheduler's or the allocator's
 * state, not the caller's code. The ranges come from the file ranges=PATH,
 * read at each window opening (hex: "S lo hi" per Send-path function, "E
 * lo hi" the entry text, "W lo hi" __switch_to_asm, "I a a" per entry
 * point, "Q lo hi" per block of interrupt stubs, "T a a" per batch function;
 * the guest writes it); without it those columns stay 0. The TB cache is
 * flushed (qemu_plugin_reset) when a window opens and when it closes, so
 * the callbacks cost nothing outside windows. The window file's
 * "shadow ..." line counts what the stacks met: barriers, rets with no
 * frame to pop (a task whose stack predates the window), pushes past the
 * depth limit, task switches, tasks not seen before.
 *
 * The counters are plain 64-bit adds, so the plugin requires one TCG
 * thread (-accel tcg,thread=single, or -icount); scripts/profile.sh runs
 * QEMU so.
 *
 * Arguments: out=PREFIX (default "insn-profile"), ranges=PATH.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_v1.h"
#include "mark.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

#define KERNEL_SPACE 0xffff800000000000ULL
#define SLOTS_PER_CHUNK 65536

/* What an instruction does to the shadow stack. */
enum insn_kind { K_OTHER, K_CALL, K_RET, K_IRET, K_SWITCH_SAVE, K_SWITCH_LOAD };

/* Where an instruction is (flags of a slot). */
#define F_SENDPATH 1u
#define F_ENTRY 2u
#define F_ENTRY_POINT 4u	/* where an interrupt, exception or syscall lands */
#define F_BATCH_ENTRY 8u	/* the first instruction of a batch function */

/*
 * One instruction address: its count, the count when the window opened,
 * its inclusive count in the open window, and (set at translation in a
 * window) its kind and flags.
 */
struct slot {
	uint64_t vaddr;
	uint64_t count;
	uint64_t at_open;
	uint64_t incl;
	uint64_t incl_batch;
	uint8_t kind;
	uint8_t flags;
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
static const char *ranges_path;
static int window_open;
static unsigned int window_number;
static qemu_plugin_id_t plugin_id;

/* The address ranges of the ranges file, by kind. */
struct range {
	uint64_t lo, hi;
};
static struct range *sendpath_ranges, entry_range, switch_range;
static size_t n_sendpath_ranges;
static struct range *entry_points, *batch_points, stub_ranges[4];
static size_t n_entry_points, n_batch_points, n_stub_ranges;

/* A shadow-stack frame. */
struct frame {
	uint8_t inside;
	uint8_t barrier;
	uint8_t batch;
};

#define MAX_DEPTH 512
#define MAX_VCPUS 64

/* Per vCPU: the shadow stack (frames[0] is the base, never popped). */
struct vcpu_state {
	struct frame frames[MAX_DEPTH];
	int depth;
	uint8_t prev_flags, prev_kind;
};
static struct vcpu_state vcpus[MAX_VCPUS];

/* The saved shadow stacks of switched-out tasks, by thread.sp address. */
struct saved_stack {
	uint64_t key;
	int depth;
	struct frame *frames;
};
static struct saved_stack *saved;
static size_t saved_size;	/* a power of two */
static size_t n_saved;		/* keys in it */

/* What the shadow stacks met in the open window. */
static uint64_t n_barriers, n_underflows, n_overflows, n_switches, n_unknown_tasks;

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
		for (i = hash(vaddr, table_size); table[i]; i = (i + 1) & (table_size - 1))
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

static int in_range(const struct range *r, uint64_t a)
{
	return a >= r->lo && a < r->hi;
}

static int in_sorted(const struct range *r, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a < r[mid].lo)
			hi = mid;
		else if (a >= r[mid].hi)
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

static void append_range(struct range **v, size_t *n, size_t *cap, struct range r)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 256;
		*v = realloc(*v, *cap * sizeof(r));
		if (!*v) {
			fprintf(stderr, "insn_profile: out of memory\n");
			exit(1);
		}
	}
	(*v)[(*n)++] = r;
}

/*
 * An interrupt, exception or system call lands here: an entry point, or
 * the first instruction of an interrupt stub, its push of the vector, or
 * with IBT (CONFIG_X86_KERNEL_IBT, our test kernel) the endbr64 before
 * it. Only the first one reached from outside the entry text counts
 * (on_insn), so the push after an endbr64 does not count twice. Before
 * the endbr64 was recognised, a device interrupt (common_interrupt, by
 * an irq_entries_start stub) that landed in a Send-path window was
 * counted as Send-path work, handler and all.
 */
static int is_entry_point(uint64_t a, const unsigned char *b, size_t n)
{
	static const unsigned char endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	size_t i;

	if (in_sorted(entry_points, n_entry_points, a))
		return 1;
	for (i = 0; i < n_stub_ranges; i++) {
		if (!in_range(&stub_ranges[i], a))
			continue;
		if ((n == 2 && b[0] == 0x6a) ||
		    (n == sizeof(endbr64) && !memcmp(b, endbr64, n)))
			return 1;
	}
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Reads the ranges file; without one, nothing is Send path. */
static void load_ranges(void)
{
	unsigned long long lo, hi;
	size_t cap = 0, cap_points = 0, cap_batch = 0;
	char kind;
	FILE *f;

	free(sendpath_ranges);
	free(entry_points);
	free(batch_points);
	sendpath_ranges = entry_points = batch_points = NULL;
	n_sendpath_ranges = n_entry_points = n_batch_points = n_stub_ranges = 0;
	entry_range = switch_range = (struct range){ 0, 0 };
	if (!ranges_path)
		return;
	f = fopen(ranges_path, "r");
	if (!f)
		return;
	while (fscanf(f, " %c %llx %llx", &kind, &lo, &hi) == 3) {
		struct range r = { lo, hi };

		if (kind == 'E') {
			entry_range = r;
		} else if (kind == 'W') {
			switch_range = r;
		} else if (kind == 'T') {
			r.hi = r.lo + 1;
			append_range(&batch_points, &n_batch_points, &cap_batch, r);
		} else if (kind == 'S') {
			append_range(&sendpath_ranges, &n_sendpath_ranges, &cap, r);
		} else if (kind == 'I') {
			r.hi = r.lo + 1;
			append_range(&entry_points, &n_entry_points, &cap_points, r);
		} else if (kind == 'Q' && n_stub_ranges < 4) {
			stub_ranges[n_stub_ranges++] = r;
		}
	}
	fclose(f);
	qsort(sendpath_ranges, n_sendpath_ranges, sizeof(struct range), range_cmp);
	qsort(entry_points, n_entry_points, sizeof(struct range), range_cmp);
	qsort(batch_points, n_batch_points, sizeof(struct range), range_cmp);
}

static void forget_saved_stacks(void)
{
	size_t i;

	for (i = 0; i < saved_size; i++)
		free(saved[i].frames);
	free(saved);
	saved = NULL;
	saved_size = n_saved = 0;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);

/* After the TB flush of a window change: translate in the new mode. */
static void after_reset(qemu_plugin_id_t id)
{
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
}

static void window_start(void)
{
	struct slot *s;
	size_t i;

	EACH_SLOT(s, i) {
		s->at_open = s->count;
		s->incl = 0;
		s->incl_batch = 0;
	}
	load_ranges();
	forget_saved_stacks();
	memset(vcpus, 0, sizeof(vcpus));
	n_barriers = n_underflows = n_overflows = n_switches = n_unknown_tasks = 0;
	window_open = 1;
	qemu_plugin_reset(plugin_id, after_reset);
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
			fprintf(f, "%llx %llu %llu %llu\n", (unsigned long long)s->vaddr,
				(unsigned long long)n, (unsigned long long)s->incl,
				(unsigned long long)s->incl_batch);
			total += n;
		}
	}
	fprintf(f, "shadow barriers %llu underflows %llu overflows %llu switches %llu unknown_tasks %llu sendpath_ranges %zu\n",
		(unsigned long long)n_barriers, (unsigned long long)n_underflows,
		(unsigned long long)n_overflows, (unsigned long long)n_switches,
		(unsigned long long)n_unknown_tasks, n_sendpath_ranges);
	fprintf(f, "total %llu\n", (unsigned long long)total);
	fclose(f);
	window_number++;
	window_open = 0;
	qemu_plugin_reset(plugin_id, after_reset);
}

static struct frame *top(struct vcpu_state *v)
{
	return &v->frames[v->depth];
}

static void push(struct vcpu_state *v, uint8_t inside, uint8_t barrier, uint8_t batch)
{
	if (v->depth + 1 >= MAX_DEPTH) {
		n_overflows++;
		return;
	}
	v->depth++;
	v->frames[v->depth] = (struct frame){ inside, barrier, batch };
}

/*
 * Per kernel instruction in a window, before it runs: the shadow stack's
 * bookkeeping and the inclusive count.
 */
static void on_insn(unsigned int vcpu, void *udata)
{
	struct slot *s = udata;
	struct vcpu_state *v = &vcpus[vcpu % MAX_VCPUS];
	int inside;

	if ((s->flags & F_ENTRY_POINT) && !(v->prev_flags & F_ENTRY)) {
		/* An interrupt, exception or syscall: not on the Send path's behalf. */
		push(v, 0, 1, 0);
		n_barriers++;
	} else if (!(s->flags & F_SENDPATH) && (v->prev_flags & F_SENDPATH) &&
		   v->prev_kind == K_OTHER) {
		/* Left Send-path code by a jump: a tail call, for this frame's rest. */
		top(v)->inside = 1;
	}
	if (s->flags & F_BATCH_ENTRY)
		top(v)->batch = 1;	/* the frame of the call into it */
	inside = (s->flags & F_SENDPATH) || top(v)->inside;
	if (inside) {
		s->incl++;
		if (top(v)->batch)
			s->incl_batch++;
	}
	switch (s->kind) {
	case K_CALL:
		push(v, inside, 0, top(v)->batch);
		break;
	case K_RET:
		if (v->depth > 0 && !top(v)->barrier)
			v->depth--;
		else
			n_underflows++;
		break;
	case K_IRET:
		while (v->depth > 0 && !v->frames[v->depth].barrier)
			v->depth--;
		if (v->depth > 0)
			v->depth--;
		else
			n_underflows++;
		/* To user space or the interrupted code: a next entry is new. */
		v->prev_flags = 0;
		v->prev_kind = K_OTHER;
		return;
	}
	v->prev_flags = s->flags;
	v->prev_kind = s->kind;
}

static struct saved_stack *saved_slot(uint64_t key, int insert)
{
	size_t i;

	if (insert && (n_saved + 1) * 2 > saved_size) {
		struct saved_stack *old = saved;
		size_t old_size = saved_size, j;

		saved_size = old_size ? old_size * 2 : 1024;
		saved = calloc(saved_size, sizeof(*saved));
		if (!saved) {
			fprintf(stderr, "insn_profile: out of memory\n");
			exit(1);
		}
		for (j = 0; j < old_size; j++) {
			if (!old[j].key)
				continue;
			for (i = hash(old[j].key, saved_size); saved[i].key;
			     i = (i + 1) & (saved_size - 1))
				;
			saved[i] = old[j];
		}
		free(old);
	}
	if (!saved_size)
		return NULL;
	for (i = hash(key, saved_size); saved[i].key; i = (i + 1) & (saved_size - 1))
		if (saved[i].key == key)
			return &saved[i];
	if (!insert)
		return NULL;
	saved[i].key = key;
	n_saved++;
	return &saved[i];
}

/* __switch_to_asm stores the outgoing task's stack pointer at vaddr. */
static void on_switch_save(unsigned int vcpu, qemu_plugin_meminfo_t info,
			   uint64_t vaddr, void *udata)
{
	struct vcpu_state *v = &vcpus[vcpu % MAX_VCPUS];
	struct saved_stack *st;
	size_t bytes = sizeof(struct frame) * (size_t)(v->depth + 1);

	(void)info;
	(void)udata;
	n_switches++;
	st = saved_slot(vaddr, 1);
	free(st->frames);
	st->frames = malloc(bytes);
	if (!st->frames) {
		fprintf(stderr, "insn_profile: out of memory\n");
		exit(1);
	}
	memcpy(st->frames, v->frames, bytes);
	st->depth = v->depth;
}

/* ... and loads the incoming task's from vaddr. */
static void on_switch_load(unsigned int vcpu, qemu_plugin_meminfo_t info,
			   uint64_t vaddr, void *udata)
{
	struct vcpu_state *v = &vcpus[vcpu % MAX_VCPUS];
	struct saved_stack *st = saved_slot(vaddr, 0);

	(void)info;
	(void)udata;
	if (st && st->frames) {
		memcpy(v->frames, st->frames, sizeof(struct frame) * (size_t)(st->depth + 1));
		v->depth = st->depth;
	} else {
		n_unknown_tasks++;
		v->depth = 0;
		v->frames[0] = (struct frame){ 0, 0, 0 };
	}
}

/* What an instruction does to the shadow stack, from its bytes. */
static enum insn_kind kind_of(const unsigned char *b, size_t n, uint64_t vaddr)
{
	size_t i = 0;

	if (in_range(&switch_range, vaddr) && n == 7 && b[0] == 0x48) {
		if (b[1] == 0x89 && b[2] == 0xa7)	/* mov %rsp, off(%rdi) */
			return K_SWITCH_SAVE;
		if (b[1] == 0x8b && b[2] == 0xa6)	/* mov off(%rsi), %rsp */
			return K_SWITCH_LOAD;
	}
	/* Legacy and REX prefixes. */
	while (i < n && ((b[i] >= 0x40 && b[i] <= 0x4f) || b[i] == 0x26 || b[i] == 0x2e ||
			 b[i] == 0x36 || b[i] == 0x3e || b[i] == 0x64 || b[i] == 0x65 ||
			 b[i] == 0x66 || b[i] == 0x67 || b[i] == 0xf0 || b[i] == 0xf2 ||
			 b[i] == 0xf3))
		i++;
	if (i >= n)
		return K_OTHER;
	switch (b[i]) {
	case 0xe8:
		return K_CALL;
	case 0xff:
		if (i + 1 < n && (((b[i + 1] >> 3) & 7) == 2 || ((b[i + 1] >> 3) & 7) == 3))
			return K_CALL;
		return K_OTHER;
	case 0xc3: case 0xc2: case 0xcb: case 0xca:
		return K_RET;
	case 0xcf:
		return K_IRET;
	case 0x0f:
		if (i + 1 < n && (b[i + 1] == 0x07 || b[i + 1] == 0x35))	/* sysret, sysexit */
			return K_IRET;
		return K_OTHER;
	}
	return K_OTHER;
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
			struct slot *s = slot_for(vaddr);

			qemu_plugin_register_vcpu_insn_exec_inline(insn,
				QEMU_PLUGIN_INLINE_ADD_U64, &s->count, 1);
			if (!window_open || !n_sendpath_ranges)
				continue;
			s->kind = kind_of(qemu_plugin_insn_data(insn),
					  qemu_plugin_insn_size(insn), vaddr);
			s->flags = (in_sorted(sendpath_ranges, n_sendpath_ranges, vaddr) ? F_SENDPATH : 0) |
				   (in_range(&entry_range, vaddr) ? F_ENTRY : 0) |
				   (in_sorted(batch_points, n_batch_points, vaddr) ? F_BATCH_ENTRY : 0) |
				   (is_entry_point(vaddr, qemu_plugin_insn_data(insn),
						   qemu_plugin_insn_size(insn)) ? F_ENTRY_POINT : 0);
			/*
			 * Both for reads and writes: QEMU 7.2 never called a
			 * read-only callback on the load (measured: no loads).
			 */
			if (s->kind == K_SWITCH_SAVE)
				qemu_plugin_register_vcpu_mem_cb(insn, on_switch_save,
					QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
			else if (s->kind == K_SWITCH_LOAD)
				qemu_plugin_register_vcpu_mem_cb(insn, on_switch_load,
					QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_insn,
				QEMU_PLUGIN_CB_NO_REGS, s);
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
		} else if (!strncmp(argv[i], "ranges=", 7)) {
			ranges_path = argv[i] + 7;
		} else {
			fprintf(stderr, "insn_profile: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	plugin_id = id;
	table_grow();
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	return 0;
}
