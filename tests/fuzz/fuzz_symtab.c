/*
 * tests/fuzz/fuzz_symtab.c: fuzz symtab_open() and the lookups after it
 * (symbolizer/symtab.h), the reader of symbol tables that come from a
 * shared object store.
 *
 * The input is a whole table.  Its checksum is made right before it is
 * opened (else nearly every input would stop there), then it is written to
 * a memfd and opened as the server opens one.  When it opens, addresses
 * spread over the range its header claims, and past it, are looked up,
 * and offsets and process addresses mapped.  Besides memory errors the
 * target aborts when a result breaks the contract: more frames than
 * SYMTAB_FRAMES_MAX, a frame without a function where the status says
 * there is one, a line without a file, an address in no function with
 * frames of functions, a symbol above the address, inlined flags that
 * are not "all but the last", a failed mapping without a reason.
 */
#include "symbolizer/symtab.h"

#include <openssl/evp.h>

#include "tests/fuzz/fuzz.h"

/* Where the header keeps its checksum, base and limit (format.h). */
#define SUM_OFF 24
#define BASE_OFF 56
#define LIMIT_OFF 64

static int memfd = -1;
static struct symtab_result result;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = fuzz_memfd("fuzz_symtab: memfd_create");
	return 0;
}

static uint64_t
le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void
check_lookup(const struct symtab *t, uint64_t va)
{
	struct symtab_result *r = &result;
	size_t i;

	symtab_lookup(t, va, r);
	FUZZ_CHECK(r->nframes <= SYMTAB_FRAMES_MAX);
	FUZZ_CHECK(r->status == SYMTAB_OK || r->status == SYMTAB_NO_LINE ||
	    r->status == SYMTAB_NO_SYMBOL);
	if (r->symbol != NULL) {
		FUZZ_CHECK(r->sym_addr <= va);
		(void)strlen(r->symbol);
	}
	if (r->status == SYMTAB_NO_SYMBOL) {
		FUZZ_CHECK(r->nframes <= 1);
		FUZZ_CHECK(r->nframes == 0 || r->frames[0].function == NULL);
	} else {
		FUZZ_CHECK(r->nframes >= 1);
	}
	if (r->status == SYMTAB_OK)
		FUZZ_CHECK(r->frames[0].file != NULL);
	for (i = 0; i < r->nframes; i++) {
		const struct symtab_frame *f = &r->frames[i];

		if (r->status != SYMTAB_NO_SYMBOL)
			FUZZ_CHECK(f->function != NULL);
		if (f->function != NULL)
			(void)strlen(f->function);
		if (f->file != NULL)
			(void)strlen(f->file);
		else
			FUZZ_CHECK(i > 0 || f->line == 0);
		FUZZ_CHECK(f->inlined == (i + 1 < r->nframes));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *p, sum[32];
	uint64_t base = 0, limit = 0, step, va, out;
	struct symtab *t;
	const char *why = NULL;
	unsigned len;
	int i;

	if ((p = (uint8_t *)fuzz_copy(data, size)) == NULL)
		return 0;
	if (size >= LIMIT_OFF + 8) {
		memset(p + SUM_OFF, 0, 32);
		EVP_Digest(p, size, sum, &len, EVP_sha256(), NULL);
		memcpy(p + SUM_OFF, sum, 32);
		base = le64(p + BASE_OFF);
		limit = le64(p + LIMIT_OFF);
	}
	if (fuzz_load(memfd, p, size) == -1) {
		free(p);
		return 0;
	}
	free(p);
	t = symtab_open(memfd, &why);
	if (t == NULL) {
		FUZZ_CHECK(why != NULL && why[0] != '\0');
		return 0;
	}
	step = limit > base ? (limit - base) / 61 + 1 : 1;
	for (i = 0, va = base; i < 64; i++, va += step)
		check_lookup(t, va);
	check_lookup(t, 0);
	check_lookup(t, limit);
	check_lookup(t, UINT64_MAX);
	for (i = 0; i < 8; i++) {
		why = NULL;
		if (symtab_offset_to_va(t, (uint64_t)i << (i * 6), &out,
			&why) == -1)
			FUZZ_CHECK(why != NULL);
		why = NULL;
		if (symtab_abs_to_va(t, base + (uint64_t)i * 4096, base,
			(uint64_t)i << 12, &out, &why) == -1)
			FUZZ_CHECK(why != NULL);
	}
	symtab_close(t);
	return 0;
}
