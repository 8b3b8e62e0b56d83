/*
 * symbolizer/demangle.h: the names people read, from the names symbol
 * tables keep: C++ (Itanium ABI), Rust legacy (_ZN...17h<hash>E) and Rust
 * v0 (_R...) symbols demangled as eu-addr2line -C and llvm-symbolizer
 * print them.
 *
 * Pure and reentrant (libiberty's demangler allocates per call): any
 * thread.
 */
#ifndef SYMBOLIZER_DEMANGLE_H
#define SYMBOLIZER_DEMANGLE_H

/*
 * The demangled form of name, malloc'd, or NULL when name is not a
 * mangled name (it starts with neither "_Z" nor "_R") or the demangler
 * refuses it (out of memory included): the raw name is then what to show.
 */
char *demangle_name(const char *name);

#endif /* SYMBOLIZER_DEMANGLE_H */
