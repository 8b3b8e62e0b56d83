/*
 * symbolizer/demangle.c: demangling (symbolizer/demangle.h) with
 * libiberty, the library behind libstdc++'s __cxa_demangle and binutils.
 *
 * C++ names go through cplus_demangle_v3 with the options __cxa_demangle
 * uses (DMGL_PARAMS | DMGL_TYPES), so the output is eu-addr2line -C's,
 * which calls __cxa_demangle, byte for byte.  Rust legacy names are also
 * valid Itanium names, and __cxa_demangle would leave their escapes
 * ($LT$, $u20$, ..) as they are; they go through rust_demangle first,
 * which decodes them, with DMGL_VERBOSE so the ::h<hash> suffix stays as
 * the Itanium reading (and eu-addr2line) shows it: a name without escapes
 * comes out the same either way.  Rust v0 names ("_R", which newer
 * rustc gives some of std) go through rust_demangle too, without the crate
 * hashes, as llvm-symbolizer prints them (eu-addr2line 0.188 leaves them
 * raw).  Other names are left alone: a bare "i" is a symbol, not the type
 * int.
 */
#include "symbolizer/demangle.h"

#include <libiberty/demangle.h>
#include <stddef.h>

char *
demangle_name(const char *name)
{
	char *s;

	if (name == NULL || name[0] != '_')
		return NULL;
	if (name[1] == 'R')
		return rust_demangle(name, 0);
	if (name[1] != 'Z')
		return NULL;
	if ((s = rust_demangle(name, DMGL_VERBOSE)) != NULL)
		return s;
	return cplus_demangle_v3(name, DMGL_PARAMS | DMGL_TYPES);
}
