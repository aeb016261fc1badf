/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One ELF file's facts for the doctor's binary checks (doctor stage):
 * its sections (unwind tables, symbols, DWARF), its build ID and
 * debuglink, the separate debug file kiln's symbolizer would find (the
 * same search: debug file cache, build ID, debuglink), the libraries it
 * needs, the allocator it brings, and whether its functions set up frame
 * pointers, judged from the prologues of a sample of them decoded with
 * capstone (through symbolize/disasm.h's decoder, kiln's one user of it).
 */
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doctor/docint.h"
#include "symbolize/disasm.h"
#include "symbolize/symbolize.h"
#include "util/buf.h"

/* Functions whose prologues are read: enough to tell, bounded for libc. */
#define FP_SAMPLE 400
/* Bytes of one function decoded at most. */
#define FP_MAX_BYTES 65536

struct func {
	uint64_t addr, size;
};

static int cmp_func(const void *a, const void *b)
{
	const struct func *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The C runtime's start-up code (crt1.o, crti.o, crtstuff.c): never built
 * with the program's flags, so it says nothing about them. */
static bool crt_function(const char *name)
{
	static const char *const names[] = {
		"_start", "_init", "_fini", "__do_global_dtors_aux",
		"frame_dummy", "register_tm_clones", "deregister_tm_clones",
		"__libc_csu_init", "__libc_csu_fini", "_dl_relocate_static_pie",
	};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	/* gcc's cold partitions are pieces of a function, not functions. */
	return strstr(name, ".cold") != NULL;
}

static void note_allocator(struct kiln_doc_elf *e, const char *name)
{
	if (!strcmp(name, "malloc"))
		e->defines_malloc = true;
	else if (!strcmp(name, "mallocx") || !strncmp(name, "je_malloc", 9))
		e->allocator = "jemalloc";
	else if (!strncmp(name, "tc_malloc", 9))
		e->allocator = "tcmalloc";
	else if (!strcmp(name, "mi_malloc"))
		e->allocator = "mimalloc";
}

/*
 * One function's prologue: whether it calls anything (non-leaf) and
 * whether it pushes %rbp and then copies %rsp into it before its first
 * call (gcc may shrink-wrap the frame past an early return, and puts
 * endbr64 first under -fcf-protection).
 */
static void judge(struct kiln_decoder *dec, const uint8_t *code, size_t size,
		  uint64_t addr, bool *nonleaf, bool *sets)
{
	struct kiln_decoded in;
	bool pushed = false;

	*nonleaf = *sets = false;
	while (kiln_decoder_next(dec, &code, &size, &addr, &in)) {
		if (in.call) {
			*nonleaf = true;
			return;
		}
		if (in.size == 1 && in.bytes[0] == 0x55)
			pushed = true;		/* push %rbp */
		else if (pushed && in.size == 3 && in.bytes[0] == 0x48 &&
			 ((in.bytes[1] == 0x89 && in.bytes[2] == 0xe5) ||
			  (in.bytes[1] == 0x8b && in.bytes[2] == 0xec)))
			*sets = true;		/* mov %rsp,%rbp */
	}
}

/* Whether cfi (with bias) has a row for addr. */
static bool covers(Dwarf_CFI *cfi, Dwarf_Addr bias, uint64_t addr)
{
	Dwarf_Frame *frame = NULL;

	if (!cfi || dwarf_cfi_addrframe(cfi, addr - bias, &frame))
		return false;
	free(frame);
	return true;
}

/* Which sampled functions the unwind tables cover. */
static void sample_cfi(struct kiln_doc_elf *e, Dwfl_Module *mod,
		       struct func *f, size_t n)
{
	size_t step = n > FP_SAMPLE ? n / FP_SAMPLE : 1, i;
	Dwarf_Addr ehbias = 0, dbias = 0;
	Dwarf_CFI *eh = dwfl_module_eh_cfi(mod, &ehbias);
	Dwarf_CFI *dbg = dwfl_module_dwarf_cfi(mod, &dbias);

	for (i = 0; i < n; i += step) {
		e->cfi_funcs++;
		e->cfi_eh += covers(eh, ehbias, f[i].addr);
		e->cfi_debug += covers(dbg, dbias, f[i].addr);
	}
}

int kiln_doc_prologue(const uint8_t *code, size_t len, uint64_t addr,
		      bool *nonleaf, bool *sets)
{
	struct kiln_decoder *dec;
	const char *arch;
	int err = kiln_decoder_open(&dec, EM_X86_64, &arch);

	if (err)
		return err;
	judge(dec, code, len, addr, nonleaf, sets);
	kiln_decoder_close(dec);
	return 0;
}

static void sample_prologues(struct kiln_doc_elf *e, Dwfl_Module *mod,
			     struct func *f, size_t n)
{
	size_t step = n > FP_SAMPLE ? n / FP_SAMPLE : 1, i;
	struct kiln_decoder *dec;
	const char *arch;
	int err = kiln_decoder_open(&dec, EM_X86_64, &arch);

	if (err) {
		e->fp_err = err;
		return;
	}
	for (i = 0; i < n; i += step) {
		Dwarf_Addr a = f[i].addr;
		Dwarf_Addr bias;
		Elf_Scn *scn = dwfl_module_address_section(mod, &a, &bias);
		GElf_Shdr sh;
		Elf_Data *data;
		bool nonleaf, sets;
		size_t len;

		if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || a >= data->d_size)
			continue;
		len = f[i].size;
		if (len > data->d_size - a)
			len = data->d_size - a;
		if (len > FP_MAX_BYTES)
			len = FP_MAX_BYTES;
		judge(dec, (const uint8_t *)data->d_buf + a, len, f[i].addr,
		      &nonleaf, &sets);
		e->fp_funcs++;
		e->fp_nonleaf += nonleaf;
		e->fp_set += nonleaf && sets;
	}
	kiln_decoder_close(dec);
}

static int32_t get_s32(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;	/* x86-64 only reads it: little-endian */
}

/*
 * A file without function symbols (stripped, no debug file): the function
 * starts are those of .eh_frame_hdr's search table, each running to the
 * next (gcc's and LLVM's encoding only: a 4-byte frame pointer and count,
 * pairs datarel|sdata4), the entry point (_start) left out.  Their unwind
 * tables are then not judged from them: they are where they came from.
 */
static int from_eh_frame_hdr(struct kiln_doc_elf *e, Dwfl_Module *mod)
{
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	size_t shstrndx, count, i, n = 0;
	Elf_Scn *scn = NULL;
	struct func *f;
	const unsigned char *p;
	GElf_Shdr sh;
	GElf_Ehdr eh;
	Elf_Data *data = NULL;

	e->fp_err = -ENODATA;
	if (!e->x86_64 || !elf || elf_getshdrstrndx(elf, &shstrndx) ||
	    !gelf_getehdr(elf, &eh))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (gelf_getshdr(scn, &sh) &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, ".eh_frame_hdr") && sh.sh_type == SHT_PROGBITS) {
			data = elf_getdata(scn, NULL);
			break;
		}
	}
	if (!data || !data->d_buf || data->d_size < 12)
		return 0;
	p = data->d_buf;
	if (p[0] != 1 || (p[1] & 0x0f) != 0x0b || p[2] != 0x03 || p[3] != 0x3b)
		return 0;
	count = (uint32_t)get_s32(p + 8);
	if (count > (data->d_size - 12) / 8)
		return 0;
	f = calloc(count ? count : 1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	for (i = 0; i < count; i++) {
		uint64_t start = sh.sh_addr + (int64_t)get_s32(p + 12 + 8 * i);

		if (start == eh.e_entry)
			continue;
		f[n++].addr = start + bias;
	}
	qsort(f, n, sizeof(*f), cmp_func);
	for (i = 0; i < n; i++)
		f[i].size = i + 1 < n ? f[i + 1].addr - f[i].addr : FP_MAX_BYTES;
	if (n) {
		e->fp_err = 0;
		e->fp_from_cfi = true;
		sample_prologues(e, mod, f, n);
	}
	free(f);
	return 0;
}

/* The module's functions (from .symtab, the debug file's, or .dynsym),
 * one per address; their allocator names noted. */
static int functions(struct kiln_doc_elf *e, Dwfl_Module *mod)
{
	int nsym = dwfl_module_getsymtab(mod), i;
	struct func *f = NULL;
	size_t n = 0, alloc = 0, j, k;

	for (i = 1; i < nsym; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr,
							   &shndx, NULL, NULL);

		if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    sym.st_shndx == SHN_UNDEF)
			continue;
		note_allocator(e, name);
		if (!sym.st_size || crt_function(name))
			continue;
		if (kiln_array_grow((void **)&f, &alloc, n + 1, sizeof(*f))) {
			free(f);
			return -ENOMEM;
		}
		f[n].addr = addr;
		f[n++].size = sym.st_size;
	}
	if (!n) {
		free(f);
		return from_eh_frame_hdr(e, mod);
	}
	qsort(f, n, sizeof(*f), cmp_func);
	for (j = 1, k = 1; j < n; j++)
		if (f[j].addr != f[k - 1].addr)
			f[k++] = f[j];
	sample_cfi(e, mod, f, k);
	if (e->x86_64)
		sample_prologues(e, mod, f, k);
	else
		e->fp_err = -ENOTSUP;
	free(f);
	return 0;
}

static bool has_section(Elf *elf, const char *want, bool *nobits)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, want) && sh.sh_size > 0) {
			if (nobits)
				*nobits = sh.sh_type == SHT_NOBITS;
			return sh.sh_type != SHT_NOBITS;
		}
	}
	return false;
}

static char *expand_origin(const char *path, const char *rp)
{
	const char *slash = strrchr(path, '/');
	struct kiln_buf b = KILN_BUF_INIT;
	int origin_len = slash ? (int)(slash - path) : 1;
	const char *origin = slash ? path : ".";

	while (*rp) {
		if (!strncmp(rp, "$ORIGIN", 7) || !strncmp(rp, "${ORIGIN}", 9)) {
			kiln_buf_add(&b, origin, (size_t)origin_len);
			rp += rp[1] == '{' ? 9 : 7;
		} else {
			kiln_buf_addc(&b, *rp++);
		}
	}
	kiln_buf_addc(&b, '\0');
	return kiln_buf_detach(&b, NULL);
}

/* DT_NEEDED, DT_RUNPATH/DT_RPATH from the dynamic section. */
static int dynamic(struct kiln_doc_elf *e, Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Dyn dyn;
		int i;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		e->dynamic = true;
		data = elf_getdata(scn, NULL);
		for (i = 0; data && gelf_getdyn(data, i, &dyn); i++) {
			const char *s;

			if (dyn.d_tag == DT_NULL)
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH &&
			    dyn.d_tag != DT_RPATH)
				continue;
			s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag != DT_NEEDED) {
				if (!e->runpath || dyn.d_tag == DT_RUNPATH) {
					free(e->runpath);
					e->runpath = expand_origin(e->path, s);
					if (!e->runpath)
						return -ENOMEM;
				}
				continue;
			}
			e->needed = realloc(e->needed, (e->nneeded + 1) * sizeof(char *));
			if (!e->needed || !(e->needed[e->nneeded] = strdup(s)))
				return -ENOMEM;
			e->nneeded++;
		}
	}
	return 0;
}

static char *hex(const unsigned char *p, int len)
{
	char *s = malloc((size_t)len * 2 + 1);
	int i;

	for (i = 0; s && i < len; i++)
		sprintf(s + 2 * i, "%02x", p[i]);
	return s;
}

static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	/* As the symbolizer searches: the debug file cache, the build-id
	 * folders, .gnu_debuglink beside the file and under /usr/lib/debug. */
	.find_debuginfo = kiln_sym_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/* What libdwfl finds for the file: separate debug file, symbols, code. */
static int through_dwfl(struct kiln_doc_elf *e)
{
	Dwfl *dwfl = dwfl_begin(&callbacks);
	Dwfl_Module *mod;
	const unsigned char *id;
	GElf_Addr vaddr;
	const char *mainfile = NULL, *debugfile = NULL;
	Dwarf_Addr bias;
	Dwarf *dw;
	int len, err = 0;

	if (!dwfl)
		return -ENOMEM;
	mod = dwfl_report_offline(dwfl, e->path, e->path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		e->err = -ENOEXEC;
		goto out;
	}
	len = dwfl_module_build_id(mod, &id, &vaddr);
	if (len > 0 && !(e->build_id = hex(id, len))) {
		err = -ENOMEM;
		goto out;
	}
	dw = dwfl_module_getdwarf(mod, &bias);
	e->dwarf = dw != NULL;
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &mainfile, &debugfile);
	if (debugfile && (!mainfile || strcmp(debugfile, mainfile))) {
		e->debugfile = strdup(debugfile);
		if (!e->debugfile) {
			err = -ENOMEM;
			goto out;
		}
		if (dw && dwarf_getelf(dw)) {
			bool nobits = false;

			e->sep_symtab = has_section(dwarf_getelf(dw), ".symtab", &nobits);
			e->debug_frame |= has_section(dwarf_getelf(dw), ".debug_frame",
						      &nobits);
		}
	}
	err = functions(e, mod);
out:
	dwfl_end(dwfl);
	return err;
}

int kiln_doc_elf_scan(struct kiln_doc_elf *e, const char *path)
{
	GElf_Ehdr eh;
	Elf *elf;
	const char *link;
	GElf_Word crc;
	int fd, err;

	memset(e, 0, sizeof(*e));
	e->path = strdup(path);
	if (!e->path)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e->err = -errno;
		return 0;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		e->err = -ENOEXEC;
		err = 0;
		goto out;
	}
	e->x86_64 = eh.e_machine == EM_X86_64;
	e->eh_frame = has_section(elf, ".eh_frame", NULL);
	e->eh_frame_hdr = has_section(elf, ".eh_frame_hdr", NULL);
	e->debug_frame = has_section(elf, ".debug_frame", NULL);
	e->symtab = has_section(elf, ".symtab", NULL);
	e->dwarf_in_file = has_section(elf, ".debug_info", NULL);
	link = dwelf_elf_gnu_debuglink(elf, &crc);
	if (link && !(e->debuglink = strdup(link))) {
		err = -ENOMEM;
		goto out;
	}
	err = dynamic(e, elf);
	if (!err)
		err = through_dwfl(e);
out:
	elf_end(elf);
	close(fd);
	return err;
}

void kiln_doc_elf_release(struct kiln_doc_elf *e)
{
	size_t i;

	free(e->path);
	free(e->debugfile);
	free(e->build_id);
	free(e->debuglink);
	free(e->runpath);
	for (i = 0; i < e->nneeded; i++)
		free(e->needed[i]);
	free(e->needed);
	memset(e, 0, sizeof(*e));
}
