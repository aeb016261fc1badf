/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DWARF unwinding of sampled user stacks through libdwfl (session stage).
 * See unwind.h.
 */
#include "session/unwind.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/perf.h"
#include "symbolize/elfbias.h"
#include "symbolize/symbolize.h"

#if defined(__x86_64__)
#define NREGS 17		/* DWARF registers libdwfl unwinds: rax..r15, rip */

/* How the caller's value of a register is found (see struct rule). */
enum {
	R_UNSET,		/* not at all (a rule libdw reports an error for) */
	R_UNDEF,		/* undefined: the caller has none */
	R_SAME,			/* the same as in this frame */
	R_AT_CFA,		/* in memory at CFA + off */
	R_CFA,			/* CFA + off itself */
	R_REG,			/* register reg[r] + off of this frame */
};

/*
 * The CFI row libdwfl would use to unwind from one address, in the few
 * shapes compilers emit for ordinary code: CFA = register + offset, each
 * register one of the kinds above.  Anything else (CFA or register
 * expressions, no CFI, the frame-pointer fallback) is not simple, and a
 * sample that meets it is unwound by libdwfl itself.
 */
struct rule {
	uint64_t pc;		/* the lookup address */
	bool used, simple, signal;
	bool in_place;		/* no R_REG entry reads a register an entry
				 * before it gives the caller */
	bool ra_undef;		/* the return address is undefined: the end */
	uint8_t ra;		/* return address register */
	uint8_t cfa_reg;
	int32_t cfa_off;
	uint32_t same;		/* R_SAME registers, a bit each */
	uint8_t nregs;		/* the other registers the caller gets a
				 * value for (not R_SAME), by number */
	struct {
		uint8_t regno, kind, src;	/* src: R_REG's register */
		int32_t off;
	} reg[NREGS];
};

#define RULES 1024		/* direct-mapped, per process */
#endif

struct kiln_unwind {
	Dwfl *dwfl;
	int pid;
	bool attached, attach_failed;
	char **paths;		/* files already reported */
	size_t npaths;
	/* The sample being unwound. */
	const struct kiln_perf_sample *s;
	uint64_t *out;
	size_t n, max;
#if defined(__x86_64__)
	struct rule *rules;	/* RULES of them, lazily */
	bool check;		/* KILN_UNWIND_CHECK: compare with libdwfl */
#endif
};

static char *debuginfo_path;

static const Dwfl_Callbacks dwfl_cbs = {
	.find_elf = dwfl_build_id_find_elf,
	/* As the symbolizer finds them: .debug_frame, where .eh_frame has
	 * no row, from the debug file cache's decompressed copy. */
	.find_debuginfo = kiln_sym_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct kiln_unwind *kiln_unwind_new(int pid)
{
	struct kiln_unwind *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->pid = pid;
#if defined(__x86_64__)
	{
		const char *c = getenv("KILN_UNWIND_CHECK");

		u->check = c && c[0] && strcmp(c, "0");
	}
#endif
	u->dwfl = dwfl_begin(&dwfl_cbs);
	if (!u->dwfl) {
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	return u;
}

void kiln_unwind_free(struct kiln_unwind *u)
{
	size_t i;

	if (!u)
		return;
	dwfl_end(u->dwfl);
#if defined(__x86_64__)
	free(u->rules);
#endif
	for (i = 0; i < u->npaths; i++)
		free(u->paths[i]);
	free(u->paths);
	free(u);
}

int kiln_unwind_add_mapping(struct kiln_unwind *u, const char *path,
			    uint64_t start, uint64_t end, uint64_t pgoff)
{
	char alt[128];
	const char *open_path = path;
	Elf *elf;
	uint64_t bias;
	char **paths;
	size_t i;
	int fd;

	if (path[0] != '/')
		return 0;
	for (i = 0; i < u->npaths; i++)
		if (!strcmp(u->paths[i], path))
			return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || strstr(path, " (deleted)")) {
		/* Deleted or replaced since: the mapped file itself. */
		if (fd >= 0)
			close(fd);
		snprintf(alt, sizeof(alt), "/proc/%d/map_files/%llx-%llx", u->pid,
			 (unsigned long long)start, (unsigned long long)end);
		open_path = alt;
		fd = open(alt, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || !kiln_sym_elf_bias(elf, start, pgoff, &bias)) {
		if (elf)
			elf_end(elf);
		close(fd);
		return 0;
	}
	elf_end(elf);
	paths = realloc(u->paths, (u->npaths + 1) * sizeof(*paths));
	if (!paths) {
		close(fd);
		return -ENOMEM;
	}
	u->paths = paths;
	u->paths[u->npaths] = strdup(path);
	if (!u->paths[u->npaths]) {
		close(fd);
		return -ENOMEM;
	}
	u->npaths++;
	dwfl_report_begin_add(u->dwfl);
	/* libdwfl takes the descriptor over. */
	if (!dwfl_report_elf(u->dwfl, path, open_path, fd, bias, false))
		close(fd);
	dwfl_report_end(u->dwfl, NULL, NULL);
#if defined(__x86_64__)
	/* An address no module covered may be in this one now. */
	if (u->rules)
		memset(u->rules, 0, RULES * sizeof(*u->rules));
#endif
	return 0;
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct kiln_unwind *u = arg;

	if (*thread_argp)
		return 0;
	*thread_argp = arg;
	return u->s ? (pid_t)u->s->tid : 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	*thread_argp = arg;
	return true;
}

#if defined(__x86_64__)
/* Index of a perf register in the sample's compacted array (kiln asks for
 * AX..SS = 0..11 and R8..R15 = 16..23). */
static int perf_idx(int reg)
{
	return reg < 12 ? reg : reg - 4;
}
#define PERF_SP 7
#define PERF_IP 8
#endif

static uint64_t sample_sp(const struct kiln_perf_sample *s)
{
#if defined(__x86_64__)
	return s->regs[perf_idx(PERF_SP)];
#else
	return 0;
#endif
}

/* A word of the stack copy of s; false outside it. */
static bool read_word(const struct kiln_perf_sample *s, uint64_t addr,
		      uint64_t *result)
{
	uint64_t sp = sample_sp(s);

	/* (Compared as offsets: addr + 8 may wrap.) */
	if (addr < sp || s->stack_dyn < sizeof(*result) ||
	    addr - sp > s->stack_dyn - sizeof(*result))
		return false;
	memcpy(result, s->stack + (addr - sp), sizeof(*result));
	return true;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			void *arg)
{
	struct kiln_unwind *u = arg;
	uint64_t v;

	if (!read_word(u->s, addr, &v))
		return false;
	*result = v;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct kiln_unwind *u = arg;
	const struct kiln_perf_sample *s = u->s;
#if defined(__x86_64__)
	/* DWARF x86-64 numbering: rax rdx rcx rbx rsi rdi rbp rsp r8-r15 rip;
	 * perf's: AX BX CX DX SI DI BP SP IP ... R8-R15 (16-23). */
	static const int from_perf[17] = { 0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18,
					   19, 20, 21, 22, 23, 8 };
	Dwarf_Word regs[17];
	int i;

	for (i = 0; i < 17; i++)
		regs[i] = s->regs[perf_idx(from_perf[i])];
	if (!dwfl_thread_state_registers(thread, 0, 17, regs))
		return false;
	dwfl_thread_state_register_pc(thread, s->regs[perf_idx(PERF_IP)]);
	return true;
#else
	return false;
#endif
}

static const Dwfl_Thread_Callbacks thread_cbs = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct kiln_unwind *u = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (!pc)
		return DWARF_CB_ABORT;
	u->out[u->n++] = pc;
	return u->n < u->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

#if defined(__x86_64__)
/*
 * Adds register regno's rule from libdw's ops for it to r (undefined and
 * unset registers get no entry: the caller has no value for them).
 * False: not a simple rule.
 */
static bool reg_rule(struct rule *r, int regno, int err, const Dwarf_Op *mem,
		     const Dwarf_Op *ops, size_t nops)
{
	size_t i = 0;
	uint64_t off = 0;
	uint8_t kind, src = 0;

	if (err)
		return true;	/* libdwfl: an error, the register unset */
	if (!nops) {
		kind = ops == mem ? R_UNDEF : !ops ? R_SAME : R_UNSET;
		if (kind == R_UNDEF && regno == r->ra)
			r->ra_undef = true;
		if (kind == R_SAME)
			r->same |= 1u << regno;
		return true;
	} else if (ops[0].atom == DW_OP_bregx && nops == 2 &&
		   ops[1].atom == DW_OP_stack_value && ops[0].number < NREGS) {
		kind = R_REG;
		src = (uint8_t)ops[0].number;
		off = ops[0].number2;
	} else {
		if (ops[i++].atom != DW_OP_call_frame_cfa)
			return false;
		kind = R_AT_CFA;
		if (i < nops && ops[i].atom == DW_OP_plus_uconst)
			off = ops[i++].number;
		if (i < nops && ops[i].atom == DW_OP_stack_value) {
			kind = R_CFA;
			i++;
		}
		if (i != nops)
			return false;
	}
	if ((int64_t)off != (int32_t)off)
		return false;
	r->reg[r->nregs].regno = (uint8_t)regno;
	r->reg[r->nregs].kind = kind;
	r->reg[r->nregs].src = src;
	r->reg[r->nregs].off = (int32_t)off;
	r->nregs++;
	return true;
}

/* Fills r for lookup address pc from the CFI libdwfl would use. */
static void make_rule(struct kiln_unwind *u, struct rule *r, uint64_t pc)
{
	Dwfl_Module *mod = dwfl_addrmodule(u->dwfl, pc);
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr bias, start, end;
	Dwarf_CFI *cfi;
	Dwarf_Op *ops, mem[3];
	size_t nops;
	int regno, ra;

	memset(r, 0, sizeof(*r));
	r->used = true;
	r->pc = pc;
	if (!mod)
		return;
	/* .eh_frame first, then .debug_frame, as __libdwfl_frame_unwind(). */
	cfi = dwfl_module_eh_cfi(mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &frame)) {
		frame = NULL;
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &frame))
			return;	/* the frame-pointer fallback: libdwfl's */
	}
	ra = dwarf_frame_info(frame, &start, &end, &r->signal);
	if (ra < 0 || ra >= NREGS ||
	    dwarf_frame_cfa(frame, &ops, &nops) || nops != 1 ||
	    ops[0].atom != DW_OP_bregx || ops[0].number >= NREGS ||
	    (int64_t)ops[0].number2 != (int32_t)ops[0].number2)
		goto out;
	r->ra = (uint8_t)ra;
	r->cfa_reg = (uint8_t)ops[0].number;
	r->cfa_off = (int32_t)ops[0].number2;
	for (regno = 0; regno < NREGS; regno++) {
		int err = dwarf_frame_register(frame, regno, mem, &ops, &nops);

		if (!reg_rule(r, regno, err, mem, ops, nops))
			goto out;
	}
	r->simple = true;
	r->in_place = true;
	for (regno = 0; regno < r->nregs; regno++) {
		int j;

		for (j = 0; j < regno; j++)
			if (r->reg[regno].kind == R_REG &&
			    r->reg[j].regno == r->reg[regno].src)
				r->in_place = false;
	}
out:
	free(frame);
}

static const struct rule *rule_for(struct kiln_unwind *u, uint64_t pc)
{
	struct rule *r;

	if (!u->rules) {
		u->rules = calloc(RULES, sizeof(*u->rules));
		if (!u->rules)
			return NULL;
	}
	r = &u->rules[(pc * 0x9e3779b97f4a7c15ull) >> 54];	/* 10 bits */
	if (!r->used || r->pc != pc)
		make_rule(u, r, pc);
	return r;
}

/*
 * What dwfl_getthread_frames() with frame_cb gives for s, computed from
 * cached CFI rows: the steps of libdwfl's handle_cfi() (every register
 * evaluated against the frame's CFA, memory read from the stack copy, the
 * caller's pc the return address register, undefined or 0 ending the
 * walk), without its allocations and its search for each row, which were
 * 85% of reading a --call-graph dwarf perf.data.  -2: a frame that is not
 * simple came; the caller asks libdwfl.
 */
static long fast_unwind(struct kiln_unwind *u, const struct kiln_perf_sample *s,
			uint64_t *out, size_t max)
{
	/* The sample's registers (kiln's compacted perf order, perf_idx())
	 * for DWARF's rax..r15, rip. */
	static const uint8_t from_perf[NREGS] = { 0, 3, 2, 1, 4, 5, 6, 7, 12,
						  13, 14, 15, 16, 17, 18, 19,
						  8 };
	const uint64_t sp = s->regs[perf_idx(PERF_SP)], dyn = s->stack_dyn;
	uint64_t reg[NREGS], val[NREGS], pc;
	uint32_t set = (1u << NREGS) - 1, nset;
	bool first = true, signal = false;
	size_t n = 0;
	int i, k;

	for (i = 0; i < NREGS; i++)
		reg[i] = s->regs[from_perf[i]];
	pc = s->regs[perf_idx(PERF_IP)];
	for (;;) {
		const struct rule *r;
		uint64_t cfa = 0, v;
		uint32_t got = 0;
		bool cfa_ok;

		if (!pc)
			break;		/* frame_cb stops there */
		out[n++] = pc;
		if (n >= max)
			break;
		r = rule_for(u, first || signal ? pc : pc - 1);
		if (!r || !r->simple)
			return -2;
		cfa_ok = (set >> r->cfa_reg) & 1;
		if (cfa_ok)
			cfa = reg[r->cfa_reg] + (uint64_t)(int64_t)r->cfa_off;
		/*
		 * The caller's registers are updated in place: an R_SAME one
		 * keeps its value (and stays known if it was); the others
		 * are computed from this frame's values, and stored as they
		 * come where no later entry reads one stored before it (else
		 * all are computed first, in val[]).  A register not in the
		 * new set is never read.
		 */
		nset = r->same & set;
		for (k = 0; k < r->nregs; k++) {
			uint64_t off = (uint64_t)(int64_t)r->reg[k].off, a;

			switch (r->reg[k].kind) {
			case R_AT_CFA:
				/* A word of the stack copy (compared as
				 * offsets: a + 8 may wrap). */
				a = cfa + off;
				if (!cfa_ok || a < sp || dyn < sizeof(v) ||
				    a - sp > dyn - sizeof(v))
					continue;
				memcpy(&v, s->stack + (a - sp), sizeof(v));
				break;
			case R_CFA:
				if (!cfa_ok)
					continue;
				v = cfa + off;
				break;
			case R_REG:
				if (!((set >> r->reg[k].src) & 1))
					continue;
				v = reg[r->reg[k].src] + off;
				break;
			default:
				continue;
			}
			if (r->in_place) {
				reg[r->reg[k].regno] = v;
				nset |= 1u << r->reg[k].regno;
			} else {
				val[k] = v;
				got |= 1u << k;
			}
		}
		for (k = 0; got && k < r->nregs; k++)
			if ((got >> k) & 1) {
				reg[r->reg[k].regno] = val[k];
				nset |= 1u << r->reg[k].regno;
			}
		/* The walk goes on only with the return address known. */
		if (r->ra_undef || !((nset >> r->ra) & 1) || !reg[r->ra])
			break;
		pc = reg[r->ra];
		set = nset;
		first = false;
		signal = r->signal;
	}
	return n ? (long)n : -1;
}
#endif

static long dwfl_unwind(struct kiln_unwind *u, const struct kiln_perf_sample *s,
			uint64_t *out, size_t max)
{
	u->out = out;
	u->n = 0;
	u->max = max;
	/* A partial walk still gives the frames found before the error. */
	dwfl_getthread_frames(u->dwfl, (pid_t)s->tid, frame_cb, u);
	return u->n ? (long)u->n : -1;
}

long kiln_unwind_sample(struct kiln_unwind *u, const struct kiln_perf_sample *s,
			uint64_t *out, size_t max)
{
	long n;

	if (!s->regs || !s->stack_dyn || !max)
		return -1;
	u->s = s;
	if (!u->attached) {
		if (u->attach_failed || !u->npaths)
			return -1;
		if (!dwfl_attach_state(u->dwfl, NULL, u->pid, &thread_cbs, u)) {
			u->attach_failed = true;
			return -1;
		}
		u->attached = true;
	}
#if defined(__x86_64__)
	n = fast_unwind(u, s, out, max);
	if (n == -2) {
		n = dwfl_unwind(u, s, out, max);
	} else if (u->check) {
		uint64_t *want = malloc(max * sizeof(*want));
		long m = want ? dwfl_unwind(u, s, want, max) : n;

		if (want && (m != n ||
			     (n > 0 && memcmp(want, out, (size_t)n * sizeof(*out))))) {
			fprintf(stderr, "kiln: unwind check: ip %#" PRIx64
				": %ld frames, libdwfl %ld\n",
				s->regs[perf_idx(PERF_IP)], n, m);
			if (m > 0)
				memcpy(out, want, (size_t)m * sizeof(*out));
			n = m;
		}
		free(want);
	}
#else
	n = dwfl_unwind(u, s, out, max);
#endif
	u->s = NULL;
	return n;
}
