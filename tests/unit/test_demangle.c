/*
 * tests/unit/test_demangle.c: symbolizer/demangle.c gives the names
 * eu-addr2line -C prints (libstdc++'s __cxa_demangle) for C++, decodes
 * Rust legacy names as c++filt does and v0 names as llvm-symbolizer does,
 * and leaves everything else alone.
 */
#include "symbolizer/demangle.h"

#include <stdlib.h>

#include "tests/tap.h"

/* The demangled name, in a static buffer; "(null)" for none. */
static const char *
dm(const char *name)
{
	static char out[512];
	char *s = demangle_name(name);

	snprintf(out, sizeof(out), "%s", s != NULL ? s : "(null)");
	free(s);
	return out;
}

int
main(void)
{
	is_str(dm("_ZN3foo3barEv"), "foo::bar()", "a C++ method");
	is_str(dm("_ZNSt6vectorIiSaIiEE9push_backERKi"),
	    "std::vector<int, std::allocator<int> >::push_back(int const&)",
	    "templates as __cxa_demangle spells them");
	is_str(dm("_ZNKSs4sizeEv"), "std::string::size() const",
	    "std:: abbreviations kept (no DMGL_VERBOSE for C++)");
	is_str(dm("_ZZN1A1fEvEN1B1gEv"), "A::f()::B::g()",
	    "a member of a local class");
	is_str(dm("_ZN4core3fmt5write17h0123456789abcdefE"),
	    "core::fmt::write::h0123456789abcdef",
	    "Rust legacy: the hash kept, as eu-addr2line shows it");
	is_str(dm("_ZN66_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$core..ops.."
		  "drop..Drop$GT$4drop17h0123456789abcdefE"),
	    "<alloc::vec::Vec<T> as core::ops::drop::Drop>::drop::"
	    "h0123456789abcdef",
	    "Rust legacy escapes decoded, as c++filt does");
	is_str(dm("_RNvNtCslNYArtu3iFV_5alloc5alloc7dealloc"),
	    "alloc::alloc::dealloc", "Rust v0, without crate hashes");
	is_str(dm("_RNvXs1e_NtNtCsgEmfK2I1SDS_4core3cmp5implsxNtB8_"
		  "10PartialOrd2lt"),
	    "<i64 as core::cmp::PartialOrd>::lt", "a v0 trait impl");
	is_str(dm("_Rfoo"), "(null)", "a broken v0 name: none");
	is_str(dm("main"), "(null)", "a C name is not mangled");
	is_str(dm("i"), "(null)", "nor is a symbol that reads as a type");
	is_str(dm("_Zfoo"), "(null)", "a broken mangled name: none");
	is_str(dm(""), "(null)", "the empty name");
	is_str(dm(NULL), "(null)", "no name");
	return tap_done();
}
