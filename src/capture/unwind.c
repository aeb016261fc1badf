/*
 * DWARF unwinding of sampled user stacks through libdwfl (capture stage).
 * See unwind.h.
 */
#include "capture/unwind.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/perf.h"

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
};

static char *debuginfo_path;

static const Dwfl_Callbacks dwfl_cbs = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct kiln_unwind *kiln_unwind_new(int pid)
{
	struct kiln_unwind *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->pid = pid;
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
	for (i = 0; i < u->npaths; i++)
		free(u->paths[i]);
	free(u->paths);
	free(u);
}

/* The load bias of an ELF file mapped at start from file offset pgoff. */
static bool load_bias(Elf *elf, uint64_t start, uint64_t pgoff, uint64_t *bias)
{
	size_t i, n;

	if (elf_getphdrnum(elf, &n))
		return false;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (pgoff >= (ph.p_offset & ~0xfffull) &&
		    pgoff < ph.p_offset + ph.p_filesz) {
			*bias = start - pgoff + ph.p_offset - ph.p_vaddr;
			return true;
		}
	}
	return false;
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
	if (!elf || !load_bias(elf, start, pgoff, &bias)) {
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

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result,
			void *arg)
{
	struct kiln_unwind *u = arg;
	const struct kiln_perf_sample *s = u->s;
	uint64_t sp = sample_sp(s);

	if (addr < sp || addr + sizeof(*result) > sp + s->stack_dyn)
		return false;
	memcpy(result, s->stack + (addr - sp), sizeof(*result));
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

long kiln_unwind_sample(struct kiln_unwind *u, const struct kiln_perf_sample *s,
			uint64_t *out, size_t max)
{
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
	u->out = out;
	u->n = 0;
	u->max = max;
	/* A partial walk still gives the frames found before the error. */
	dwfl_getthread_frames(u->dwfl, (pid_t)s->tid, frame_cb, u);
	u->s = NULL;
	return u->n ? (long)u->n : -1;
}
