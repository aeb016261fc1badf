/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A function's instructions (symbolize stage): see disasm.h.  The file is
 * opened as a regular file only, reported to a libdwfl session of its own
 * (offline, as kiln doctor reads a binary), the symbol found with
 * dwfl_module_addrinfo(), its bytes taken from the section holding it,
 * decoded by capstone, and each instruction's line looked up as the
 * symbolizer looks lines up (cuaddr.c: also in files without
 * .debug_aranges, as clang builds them).  The decoder (struct kiln_decoder) is kiln's one
 * user of capstone: kiln doctor's prologue judge decodes through it too.
 */
#include <capstone/capstone.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "symbolize/disasm.h"
#include "symbolize/symint.h"
#include "util/diag.h"
#include "util/file.h"
#include "util/lazylib.h"

/* capstone, loaded by the first decoder opened (util/lazylib.h): kiln
 * doctor and kiln serve's disassembly are its only users. */
#define CS_FNS(X) \
	X(disasm_iter, cs_disasm_iter) X(open, cs_open) X(malloc, cs_malloc) \
	X(free, cs_free) X(close, cs_close)
KILN_LAZYLIB(capstone, KILN_SONAME_CAPSTONE, KILN_PKG_CAPSTONE, CS_FNS);
#define CS (capstone_fns.f)

static char *debuginfo_path;
static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	/* The symbolizer's search: the debug file cache, build-id folders,
	 * .gnu_debuglink beside the file and under /usr/lib/debug. */
	.find_debuginfo = kiln_sym_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

struct kiln_decoder {
	csh h;
	cs_insn *in;
	int machine;
};

int kiln_decoder_open(struct kiln_decoder **out, int machine,
		      const char **arch)
{
	struct kiln_decoder *dec;
	cs_arch a;
	cs_mode mode;

	if (machine == EM_X86_64) {
		a = CS_ARCH_X86;
		mode = CS_MODE_64;
		*arch = "x86-64";
	} else if (machine == EM_AARCH64) {
		a = CS_ARCH_ARM64;
		mode = CS_MODE_ARM;
		*arch = "aarch64";
	} else {
		return -ENOTSUP;
	}
	if (kiln_lazylib_open(&capstone, NULL))
		return -ENOENT;
	dec = calloc(1, sizeof(*dec));
	if (!dec)
		return -ENOMEM;
	dec->machine = machine;
	if (CS.open(a, mode, &dec->h) != CS_ERR_OK) {
		free(dec);
		return -ENOTSUP;
	}
	dec->in = CS.malloc(dec->h);
	if (!dec->in) {
		CS.close(&dec->h);
		free(dec);
		return -ENOMEM;
	}
	*out = dec;
	return 0;
}

void kiln_decoder_close(struct kiln_decoder *dec)
{
	if (!dec)
		return;
	CS.free(dec->in, 1);
	CS.close(&dec->h);
	free(dec);
}

bool kiln_decoder_next(struct kiln_decoder *dec, const uint8_t **code,
		       size_t *left, uint64_t *addr, struct kiln_decoded *out)
{
	cs_insn *in = dec->in;

	if (!*left || !CS.disasm_iter(dec->h, code, left, addr, in))
		return false;
	out->addr = in->address;
	out->size = in->size;
	out->bytes = in->bytes;
	out->mnemonic = in->mnemonic;
	out->ops = in->op_str;
	out->call = dec->machine == EM_X86_64 ? in->id == X86_INS_CALL :
		in->id == ARM64_INS_BL || in->id == ARM64_INS_BLR;
	return true;
}

void kiln_disasm_release(struct kiln_disasm *x)
{
	size_t i;

	free(x->symbol);
	free(x->build_id);
	free(x->insns);
	for (i = 0; i < x->nfiles; i++)
		free(x->files[i]);
	free(x->files);
	memset(x, 0, sizeof(*x));
}

static char *hex(const unsigned char *p, int n)
{
	char *s = malloc((size_t)n * 2 + 1);
	int i;

	if (!s)
		return NULL;
	for (i = 0; i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", p[i]);
	return s;
}

/* The file address (ELF virtual address) of file offset off, from the
 * loadable segments; false when no segment maps it. */
static bool offset_to_vaddr(Elf *elf, uint64_t off, uint64_t *vaddr)
{
	size_t n, i;

	if (elf_getphdrnum(elf, &n))
		return false;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (off >= ph.p_offset && off < ph.p_offset + ph.p_filesz) {
			*vaddr = off - ph.p_offset + ph.p_vaddr;
			return true;
		}
	}
	return false;
}

/* The source file index (+1) of name in x, added when new; 0 on no
 * memory (the line is then left out). */
static uint32_t file_index(struct kiln_disasm *x, const char *name)
{
	char **f;
	size_t i;

	for (i = x->nfiles; i > 0; i--)
		if (!strcmp(x->files[i - 1], name))
			return (uint32_t)i;
	f = realloc(x->files, (x->nfiles + 1) * sizeof(*f));
	if (!f)
		return 0;
	x->files = f;
	f[x->nfiles] = strdup(name);
	if (!f[x->nfiles])
		return 0;
	return (uint32_t)++x->nfiles;
}

/* Decodes code[0..len) at file address start (file offset start_off)
 * into x->insns, with lines from mod (addresses + bias; units found
 * through cus). */
static int decode(struct kiln_disasm *x, struct kiln_decoder *dec,
		  Dwfl_Module *mod, struct ksym_cutab *cus, Dwarf_Addr bias,
		  const uint8_t *code, size_t len, uint64_t start,
		  uint64_t start_off)
{
	uint64_t addr = start;
	size_t cap = 0;
	const uint8_t *p = code;
	size_t left = len;

	while (left) {
		struct kiln_decoded in;
		struct kiln_insn *k;
		uint64_t at = addr;
		char path[PATH_MAX];
		const char *file;
		int lineno;

		if (x->n == cap) {
			size_t nc = cap ? cap * 2 : 64;
			struct kiln_insn *ni = realloc(x->insns, nc * sizeof(*ni));

			if (!ni)
				return -ENOMEM;
			x->insns = ni;
			cap = nc;
		}
		k = &x->insns[x->n];
		memset(k, 0, sizeof(*k));
		if (!kiln_decoder_next(dec, &p, &left, &addr, &in)) {
			/* Not an instruction (data in code, padding): one
			 * byte shown as such, and on. */
			k->size = 1;
			snprintf(k->text, sizeof(k->text), ".byte 0x%02x", *p);
			p++;
			left--;
			addr++;
		} else {
			k->size = in.size;
			snprintf(k->text, sizeof(k->text), "%.31s%s%.150s", in.mnemonic,
				 in.ops[0] ? " " : "", in.ops);
		}
		k->addr = at;
		k->offset = start_off + (at - start);
		file = ksym_src_at(mod, cus, at + bias, &lineno, path,
				   sizeof(path));
		if (file && lineno > 0) {
			k->file = file_index(x, file);
			k->line = lineno;
		}
		x->n++;
	}
	return 0;
}

/* The build ID check and the symbol over file address vaddr: its name and
 * range into x.  0, or -ESTALE / -ENOEXEC with d filled, or -ENOMEM. */
static int find_symbol(struct kiln_disasm *x, Dwfl_Module *mod,
		       Dwarf_Addr bias, uint64_t vaddr, const char *build_id,
		       const char *path, struct kiln_diag *d)
{
	const unsigned char *id;
	GElf_Addr idaddr;
	GElf_Off symoff;
	GElf_Sym sym;
	const char *name;
	char *dem;
	int len = dwfl_module_build_id(mod, &id, &idaddr);

	if (len > 0 && !(x->build_id = hex(id, len)))
		return -ENOMEM;
	if (build_id && *build_id && (!x->build_id || strcasecmp(x->build_id, build_id))) {
		kiln_diag(d, "'%s' has build ID %s, the profile's has %s: the file "
			  "changed since the profile was taken", path,
			  x->build_id ? x->build_id : "(none)", build_id);
		return -ESTALE;
	}
	name = dwfl_module_addrinfo(mod, vaddr + bias, &symoff, &sym, NULL, NULL,
				    NULL);
	if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC) {
		kiln_diag(d, "no function symbol of '%s' covers address 0x%llx", path,
			  (unsigned long long)vaddr);
		return -ENOEXEC;
	}
	x->start = vaddr - symoff;
	/* A symbol without a size (hand-written assembly): up to the
	 * address asked for and a little more, enough to see it. */
	x->end = x->start + (sym.st_size ? sym.st_size : symoff + 64);
	dem = kiln_sym_demangle(name);
	x->symbol = dem ? dem : strdup(name);
	return x->symbol ? 0 : -ENOMEM;
}

int kiln_disasm_at(const char *path, const char *build_id, uint64_t offset,
		   struct kiln_disasm *out, struct kiln_diag *d)
{
	struct kiln_disasm x = { 0 };
	struct ksym_cutab cus = { 0 };
	Dwfl *dwfl = NULL;
	Dwfl_Module *mod;
	Dwarf_Addr bias, sbias, a;
	Elf_Scn *scn;
	Elf_Data *data;
	Elf *elf;
	uint64_t vaddr, len;
	struct kiln_decoder *dec = NULL;
	GElf_Ehdr eh;
	int fd, err;

	memset(out, 0, sizeof(*out));
	fd = kiln_open_regular(path);
	if (fd < 0) {
		kiln_diag(d, "cannot open '%s': %s", path, strerror(-fd));
		return -ENOENT;
	}
	dwfl = dwfl_begin(&callbacks);
	if (!dwfl) {
		close(fd);
		return -ENOMEM;
	}
	/* libdwfl owns fd from here. */
	mod = dwfl_report_offline(dwfl, path, path, fd);
	dwfl_report_end(dwfl, NULL, NULL);
	elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	if (!elf) {
		kiln_diag(d, "'%s' is not an ELF file libdwfl reads", path);
		err = -ENOEXEC;
		goto out;
	}
	if (!offset_to_vaddr(elf, offset, &vaddr)) {
		kiln_diag(d, "no loadable segment of '%s' holds offset 0x%llx", path,
			  (unsigned long long)offset);
		err = -ENOEXEC;
		goto out;
	}
	err = find_symbol(&x, mod, bias, vaddr, build_id, path, d);
	if (err)
		goto out;
	a = x.start + bias;
	scn = dwfl_module_address_section(mod, &a, &sbias);
	data = scn ? elf_getdata(scn, NULL) : NULL;
	if (!data || !data->d_buf || a >= data->d_size) {
		kiln_diag(d, "the bytes of %s are not in '%s'", x.symbol, path);
		err = -ENOEXEC;
		goto out;
	}
	len = x.end - x.start;
	if (len > data->d_size - a)
		len = data->d_size - a;
	if (len > KILN_DISASM_MAX) {
		len = KILN_DISASM_MAX;
		x.truncated = true;
	}
	err = gelf_getehdr(elf, &eh) ?
		kiln_decoder_open(&dec, eh.e_machine, &x.arch) : -ENOEXEC;
	if (err == -ENOTSUP || err == -ENOEXEC) {
		kiln_diag(d, "'%s' is for a machine kiln does not disassemble", path);
		goto out;
	}
	if (err == -ENOENT) {
		/* Said as the lazy loader says it; 501: not the file's fault. */
		kiln_lazylib_open(&capstone, d);
		err = -ENOTSUP;
		goto out;
	}
	if (err)
		goto out;
	/* The symbol's file offset: through the same segment as vaddr. */
	err = decode(&x, dec, mod, &cus, bias, (const uint8_t *)data->d_buf + a,
		     len, x.start, offset - (vaddr - x.start));
	kiln_decoder_close(dec);
out:
	ksym_cutab_release(&cus);
	dwfl_end(dwfl);
	if (err) {
		kiln_disasm_release(&x);
		return err;
	}
	*out = x;
	return 0;
}
