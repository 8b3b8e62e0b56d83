/*
 * tests/mkelf.c: write small hand-made ELF64 little-endian files for tests.
 *
 * Compilers never produce the odd and hostile files the ELF reader has to
 * survive, so this program builds them from the <elf.h> structures alone (no
 * libelf): build-id notes of any length or with a lying length, files
 * without section headers, broken header fields, truncated files, and
 * multi-gigabyte sparse debug files that take no time or disk to write.
 *
 * Layout, in file order: the ELF header; the program headers (ET_EXEC and
 * ET_DYN, or any type with --no-shdrs): a PT_LOAD from offset 0 over .text
 * when there is a .text, and a PT_NOTE over the build-id note; then
 * .note.gnu.build-id, .text, .gnu_debugaltlink, the --debug and --section
 * sections in command-line order, .shstrtab, and the section header table.
 *
 * Section bytes, so that tests can check what they read: .text is all 0xcc;
 * byte i of a --debug or --section section NAME is (i * 31 + h) & 0xff, h
 * being the sum of the bytes of NAME.  Only the first MiB of such a section
 * is written; the rest is left as a hole and reads as zeros, which is what
 * makes --debug .debug_info:2G quick.
 *
 * Exit status: 0 when the file is written, 1 on an I/O error, 2 on bad usage.
 */
#define _FILE_OFFSET_BITS 64

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

#define MAX_SECTIONS 64
/* Bytes of a pattern section actually written; the rest is a hole. */
#define DENSE_MAX (1u << 20)
/* Longest --build-id or --altlink id, in bytes. */
#define ID_MAX 2048

enum fill {
	FILL_BYTES, /* the bytes at sec.bytes */
	FILL_CC, /* 0xcc, like int3 padding */
	FILL_PATTERN, /* (i * 31 + name hash) & 0xff, sparse after DENSE_MAX */
};

struct sec {
	const char *name;
	uint32_t type;
	uint64_t flags;
	uint64_t size;
	uint64_t align;
	enum fill fill;
	const uint8_t *bytes;
	/* Set by build() and layout(). */
	uint64_t offset;
	uint64_t addr;
	uint32_t name_off;
};

struct opts {
	uint16_t type;
	uint8_t id[ID_MAX];
	size_t idlen;
	int have_id;
	uint64_t desc_len; /* what the note header claims */
	int lie_desc_len;
	uint64_t text_size;
	int have_text;
	int text_nobits;
	const char *alt_path;
	uint8_t alt_id[ID_MAX];
	size_t alt_idlen;
	int no_shdrs;
	uint64_t truncate_to;
	int do_truncate;
	int bad_shstrndx;
	int shoff_past_end;
	struct sec extra[MAX_SECTIONS];
	size_t nextra;
};

static const char *progname = "mkelf";

static void
usage(FILE *fp)
{
	fprintf(fp, "usage: %s [options] OUTPUT\n", progname);
	fputs("  --type exec|dyn|rel   e_type (default dyn)\n"
	      "  --build-id HEX        add a GNU build-id note\n"
	      "  --note-desc-len N     claim n_descsz N in that note\n"
	      "  --text SIZE           add .text, SIZE bytes of 0xcc\n"
	      "  --nobits-text SIZE    add .text as SHT_NOBITS\n"
	      "  --debug NAME:SIZE     add a section of pattern bytes\n"
	      "  --section NAME:SIZE   the same, for any name\n"
	      "  --altlink PATH:HEX    add .gnu_debugaltlink\n"
	      "  --no-shdrs            no section header table\n"
	      "  --truncate N          cut the file to N bytes at the end\n"
	      "  --bad-shstrndx        e_shstrndx out of range\n"
	      "  --shoff-past-end      e_shoff past the end of the file\n"
	      "SIZE takes a K, M or G suffix; pattern sections are sparse\n"
	      "after their first MiB.\n",
	    fp);
}

static _Noreturn void die_usage(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

static void
die_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr);
	exit(2);
}

static _Noreturn void
die_io(const char *what, const char *path)
{
	fprintf(stderr, "%s: %s: %s: %s\n", progname, path, what,
	    strerror(errno));
	exit(1);
}

/* The file is little-endian whatever the host is. */
static int
host_is_le(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 1;
}

static uint16_t
le16(uint16_t v)
{
	return host_is_le() ? v : __builtin_bswap16(v);
}

static uint32_t
le32(uint32_t v)
{
	return host_is_le() ? v : __builtin_bswap32(v);
}

static uint64_t
le64(uint64_t v)
{
	return host_is_le() ? v : __builtin_bswap64(v);
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Hex of any even length, the empty string included (a 0-byte id). */
static void
parse_hex(const char *opt, const char *s, uint8_t *out, size_t *outlen)
{
	size_t i, len = strlen(s);

	if (len % 2 != 0)
		die_usage("%s: odd number of hex digits in '%s'", opt, s);
	if (len / 2 > ID_MAX)
		die_usage("%s: more than %d bytes", opt, ID_MAX);
	for (i = 0; i < len; i += 2) {
		int hi = hexval((unsigned char)s[i]);
		int lo = hexval((unsigned char)s[i + 1]);

		if (hi < 0 || lo < 0)
			die_usage("%s: '%s' is not hexadecimal", opt, s);
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*outlen = len / 2;
}

/* A decimal (or 0x hex) number with an optional K, M or G suffix. */
static uint64_t
parse_size(const char *opt, const char *s)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	if (*s == '\0' || *s == '-')
		die_usage("%s: '%s' is not a size", opt, s);
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || end == s)
		die_usage("%s: '%s' is not a size", opt, s);
	switch (*end) {
	case '\0':
		break;
	case 'k':
	case 'K':
		mult = 1ull << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1ull << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1ull << 30;
		end++;
		break;
	default:
		die_usage("%s: '%s' has an unknown suffix", opt, s);
	}
	if (*end != '\0')
		die_usage("%s: '%s' has trailing characters", opt, s);
	if (v > UINT64_MAX / mult)
		die_usage("%s: '%s' is too large", opt, s);
	return (uint64_t)v * mult;
}

/* NAME:SIZE for --debug and --section. */
static void
add_extra(struct opts *o, const char *opt, char *arg)
{
	char *colon = strrchr(arg, ':');
	struct sec *s;

	if (colon == NULL || colon == arg)
		die_usage("%s: expected NAME:SIZE, got '%s'", opt, arg);
	if (o->nextra == MAX_SECTIONS)
		die_usage("%s: more than %d sections", opt, MAX_SECTIONS);
	*colon = '\0';
	s = &o->extra[o->nextra++];
	memset(s, 0, sizeof(*s));
	s->name = arg;
	s->type = SHT_PROGBITS;
	s->size = parse_size(opt, colon + 1);
	s->align = 1;
	s->fill = FILL_PATTERN;
}

enum {
	OPT_TYPE = 256,
	OPT_BUILD_ID,
	OPT_NOTE_DESC_LEN,
	OPT_TEXT,
	OPT_NOBITS_TEXT,
	OPT_DEBUG,
	OPT_SECTION,
	OPT_ALTLINK,
	OPT_NO_SHDRS,
	OPT_TRUNCATE,
	OPT_BAD_SHSTRNDX,
	OPT_SHOFF_PAST_END,
	OPT_HELP,
};

static const struct option longopts[] = {
	{ "type", required_argument, NULL, OPT_TYPE },
	{ "build-id", required_argument, NULL, OPT_BUILD_ID },
	{ "note-desc-len", required_argument, NULL, OPT_NOTE_DESC_LEN },
	{ "text", required_argument, NULL, OPT_TEXT },
	{ "nobits-text", required_argument, NULL, OPT_NOBITS_TEXT },
	{ "debug", required_argument, NULL, OPT_DEBUG },
	{ "section", required_argument, NULL, OPT_SECTION },
	{ "altlink", required_argument, NULL, OPT_ALTLINK },
	{ "no-shdrs", no_argument, NULL, OPT_NO_SHDRS },
	{ "truncate", required_argument, NULL, OPT_TRUNCATE },
	{ "bad-shstrndx", no_argument, NULL, OPT_BAD_SHSTRNDX },
	{ "shoff-past-end", no_argument, NULL, OPT_SHOFF_PAST_END },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static const char *
parse_args(struct opts *o, int argc, char **argv)
{
	char *colon;
	int c;

	memset(o, 0, sizeof(*o));
	o->type = ET_DYN;
	/* "+": stop at the first operand, as POSIX utilities do. */
	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_TYPE:
			if (strcmp(optarg, "exec") == 0)
				o->type = ET_EXEC;
			else if (strcmp(optarg, "dyn") == 0)
				o->type = ET_DYN;
			else if (strcmp(optarg, "rel") == 0)
				o->type = ET_REL;
			else
				die_usage("--type %s: not exec, dyn or rel",
				    optarg);
			break;
		case OPT_BUILD_ID:
			parse_hex("--build-id", optarg, o->id, &o->idlen);
			o->have_id = 1;
			break;
		case OPT_NOTE_DESC_LEN:
			o->desc_len = parse_size("--note-desc-len", optarg);
			if (o->desc_len > UINT32_MAX)
				die_usage("--note-desc-len %s: over 32 bits",
				    optarg);
			o->lie_desc_len = 1;
			break;
		case OPT_TEXT:
		case OPT_NOBITS_TEXT:
			if (o->have_text)
				die_usage("--text or --nobits-text, once");
			o->text_size =
			    parse_size(c == OPT_TEXT ? "--text"
						     : "--nobits-text",
				optarg);
			o->text_nobits = c == OPT_NOBITS_TEXT;
			o->have_text = 1;
			break;
		case OPT_DEBUG:
			add_extra(o, "--debug", optarg);
			break;
		case OPT_SECTION:
			add_extra(o, "--section", optarg);
			break;
		case OPT_ALTLINK:
			if ((colon = strrchr(optarg, ':')) == NULL)
				die_usage("--altlink %s: not PATH:HEX", optarg);
			*colon = '\0';
			o->alt_path = optarg;
			parse_hex("--altlink", colon + 1, o->alt_id,
			    &o->alt_idlen);
			break;
		case OPT_NO_SHDRS:
			o->no_shdrs = 1;
			break;
		case OPT_TRUNCATE:
			o->truncate_to = parse_size("--truncate", optarg);
			if (o->truncate_to > INT64_MAX)
				die_usage("--truncate %s: too large", optarg);
			o->do_truncate = 1;
			break;
		case OPT_BAD_SHSTRNDX:
			o->bad_shstrndx = 1;
			break;
		case OPT_SHOFF_PAST_END:
			o->shoff_past_end = 1;
			break;
		case OPT_HELP:
			usage(stdout);
			exit(0);
		default:
			/* getopt_long has said what is wrong. */
			usage(stderr);
			exit(2);
		}
	}
	if (optind != argc - 1)
		die_usage("%s",
		    optind == argc ? "no OUTPUT given"
				   : "only one OUTPUT, please");
	if (o->lie_desc_len && !o->have_id)
		die_usage("--note-desc-len needs --build-id");
	if (o->no_shdrs && (o->bad_shstrndx || o->shoff_past_end))
		die_usage("--bad-shstrndx, --shoff-past-end: need shdrs");
	return argv[optind];
}

/* A section as it will be written, with everything but its place. */
static struct sec *
add_sec(struct sec *secs, size_t *n, const char *name, uint32_t type,
    uint64_t flags, uint64_t size, uint64_t align)
{
	struct sec *s = &secs[(*n)++];

	memset(s, 0, sizeof(*s));
	s->name = name;
	s->type = type;
	s->flags = flags;
	s->size = size;
	s->align = align;
	return s;
}

static uint64_t
align_up(uint64_t v, uint64_t a)
{
	return a <= 1 ? v : (v + a - 1) / a * a;
}

static uint8_t
name_hash(const char *name)
{
	unsigned h = 0;

	while (*name != '\0')
		h += (unsigned char)*name++;
	return (uint8_t)h;
}

static void
pwrite_all(int fd, const void *buf, size_t len, uint64_t off, const char *path)
{
	const char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = pwrite(fd, p, len, (off_t)off);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			die_io("write", path);
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
}

static void
write_sec(int fd, const struct sec *s, const char *path)
{
	uint8_t buf[65536];
	uint64_t done = 0, len, dense;
	uint8_t h = name_hash(s->name);
	size_t i;

	if (s->type == SHT_NOBITS || s->size == 0)
		return;
	if (s->fill == FILL_BYTES) {
		pwrite_all(fd, s->bytes, (size_t)s->size, s->offset, path);
		return;
	}
	dense = s->fill == FILL_PATTERN && s->size > DENSE_MAX ? DENSE_MAX
							       : s->size;
	while (done < dense) {
		len = dense - done < sizeof(buf) ? dense - done : sizeof(buf);
		for (i = 0; i < len; i++)
			buf[i] = s->fill == FILL_CC
			    ? 0xcc
			    : (uint8_t)((done + i) * 31 + h);
		pwrite_all(fd, buf, (size_t)len, s->offset + done, path);
		done += len;
	}
}

/* The file being made: its sections and where everything goes. */
struct image {
	struct sec secs[MAX_SECTIONS + 8];
	size_t nsecs;
	struct sec *text; /* NULL when there is none */
	struct sec *notesec; /* NULL when there is none */
	char *shstrtab;
	size_t phnum;
	size_t shnum;
	uint64_t base; /* load address of offset 0 */
	uint64_t shoff;
	uint64_t filesize;
	uint8_t note[12 + 4 + ID_MAX + 4];
	uint8_t altlink[4096 + 1 + ID_MAX];
};

/* The sections the options ask for, in file order, with their bytes. */
static void
build(const struct opts *o, struct image *im)
{
	struct sec *s;
	Elf64_Nhdr nh;
	size_t i, len, pathlen;

	/* Section 0 is the null section every table starts with. */
	add_sec(im->secs, &im->nsecs, "", SHT_NULL, 0, 0, 0);
	if (o->have_id) {
		nh.n_namesz = le32(4);
		nh.n_descsz =
		    le32((uint32_t)(o->lie_desc_len ? o->desc_len : o->idlen));
		nh.n_type = le32(NT_GNU_BUILD_ID);
		memcpy(im->note, &nh, sizeof(nh));
		memcpy(im->note + sizeof(nh), "GNU", 4);
		memcpy(im->note + sizeof(nh) + 4, o->id, o->idlen);
		len = sizeof(nh) + 4 + (size_t)align_up(o->idlen, 4);
		s = add_sec(im->secs, &im->nsecs, ".note.gnu.build-id",
		    SHT_NOTE, SHF_ALLOC, len, 4);
		s->fill = FILL_BYTES;
		s->bytes = im->note;
		im->notesec = s;
	}
	if (o->have_text) {
		s = add_sec(im->secs, &im->nsecs, ".text",
		    o->text_nobits ? SHT_NOBITS : SHT_PROGBITS,
		    SHF_ALLOC | SHF_EXECINSTR, o->text_size, 16);
		s->fill = FILL_CC;
		im->text = s;
	}
	if (o->alt_path != NULL) {
		if ((pathlen = strlen(o->alt_path)) > 4096)
			die_usage("--altlink: path longer than 4096 bytes");
		memcpy(im->altlink, o->alt_path, pathlen + 1);
		memcpy(im->altlink + pathlen + 1, o->alt_id, o->alt_idlen);
		s = add_sec(im->secs, &im->nsecs, ".gnu_debugaltlink",
		    SHT_PROGBITS, 0, pathlen + 1 + o->alt_idlen, 1);
		s->fill = FILL_BYTES;
		s->bytes = im->altlink;
	}
	for (i = 0; i < o->nextra; i++)
		im->secs[im->nsecs++] = o->extra[i];

	/* Real relocatable files have no program headers. */
	if (o->type != ET_REL || o->no_shdrs)
		im->phnum = (im->text != NULL) + (im->notesec != NULL);
	if (o->no_shdrs)
		return;

	/* The section name table goes last, naming every section. */
	s = add_sec(im->secs, &im->nsecs, ".shstrtab", SHT_STRTAB, 0, 0, 1);
	len = 1;
	for (i = 1; i < im->nsecs; i++)
		len += strlen(im->secs[i].name) + 1;
	if ((im->shstrtab = calloc(1, len)) == NULL) {
		fprintf(stderr, "%s: out of memory\n", progname);
		exit(1);
	}
	len = 1;
	for (i = 1; i < im->nsecs; i++) {
		im->secs[i].name_off = (uint32_t)len;
		strcpy(im->shstrtab + len, im->secs[i].name);
		len += strlen(im->secs[i].name) + 1;
	}
	s->size = len;
	s->fill = FILL_BYTES;
	s->bytes = (const uint8_t *)im->shstrtab;
	im->shnum = im->nsecs;
}

/*
 * Give every section its offset, one after the other behind the headers.
 * Allocated sections get the address their offset has in a load image at
 * base, which keeps the PT_LOAD from offset 0 congruent with its addresses.
 */
static void
layout(const struct opts *o, struct image *im)
{
	struct sec *s;
	uint64_t off;
	size_t i;

	im->base = o->type == ET_EXEC ? 0x400000 : 0;
	off = sizeof(Elf64_Ehdr) + im->phnum * sizeof(Elf64_Phdr);
	for (i = 1; i < im->nsecs; i++) {
		s = &im->secs[i];
		off = align_up(off, s->align);
		s->offset = off;
		if ((s->flags & SHF_ALLOC) != 0 && o->type != ET_REL)
			s->addr = im->base + off;
		if (s->type == SHT_NOBITS)
			continue;
		if (s->size > INT64_MAX / 2 - off)
			die_usage("%s: too large", s->name);
		off += s->size;
	}
	if (im->shnum > 0) {
		im->shoff = align_up(off, 8);
		off = im->shoff + im->shnum * sizeof(Elf64_Shdr);
	}
	im->filesize = off;
}

static void
write_ehdr(int fd, const struct opts *o, const struct image *im,
    const char *path)
{
	Elf64_Ehdr eh;
	uint64_t shoff = im->shoff;

	if (o->shoff_past_end)
		shoff = align_up(im->filesize, 4096) + 4096;
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_ident[EI_OSABI] = ELFOSABI_SYSV;
	eh.e_type = le16(o->type);
	eh.e_machine = le16(EM_X86_64);
	eh.e_version = le32(EV_CURRENT);
	eh.e_entry = le64(im->text != NULL ? im->text->addr : 0);
	eh.e_phoff = le64(im->phnum > 0 ? sizeof(eh) : 0);
	eh.e_shoff = le64(shoff);
	eh.e_ehsize = le16(sizeof(eh));
	eh.e_phentsize = le16(im->phnum > 0 ? sizeof(Elf64_Phdr) : 0);
	eh.e_phnum = le16((uint16_t)im->phnum);
	eh.e_shentsize = le16(im->shnum > 0 ? sizeof(Elf64_Shdr) : 0);
	eh.e_shnum = le16((uint16_t)im->shnum);
	/* .shstrtab is the last section. */
	if (o->bad_shstrndx)
		eh.e_shstrndx = le16((uint16_t)(im->shnum + 10));
	else if (im->shnum > 0)
		eh.e_shstrndx = le16((uint16_t)(im->shnum - 1));
	pwrite_all(fd, &eh, sizeof(eh), 0, path);
}

static void
write_phdrs(int fd, const struct image *im, const char *path)
{
	const struct sec *t = im->text, *n = im->notesec;
	Elf64_Phdr ph[2];
	size_t i = 0;

	if (im->phnum == 0)
		return;
	memset(ph, 0, sizeof(ph));
	if (t != NULL) {
		/* Headers, note and code in one read-execute segment. */
		ph[i].p_type = le32(PT_LOAD);
		ph[i].p_flags = le32(PF_R | PF_X);
		ph[i].p_offset = 0;
		ph[i].p_vaddr = ph[i].p_paddr = le64(im->base);
		ph[i].p_filesz =
		    le64(t->offset + (t->type == SHT_NOBITS ? 0 : t->size));
		ph[i].p_memsz = le64(t->offset + t->size);
		ph[i].p_align = le64(0x1000);
		i++;
	}
	if (n != NULL) {
		ph[i].p_type = le32(PT_NOTE);
		ph[i].p_flags = le32(PF_R);
		ph[i].p_offset = le64(n->offset);
		ph[i].p_vaddr = ph[i].p_paddr = le64(n->addr);
		ph[i].p_filesz = ph[i].p_memsz = le64(n->size);
		ph[i].p_align = le64(4);
		i++;
	}
	pwrite_all(fd, ph, i * sizeof(ph[0]), sizeof(Elf64_Ehdr), path);
}

static void
write_shdrs(int fd, const struct image *im, const char *path)
{
	const struct sec *s;
	Elf64_Shdr sh;
	size_t i;

	for (i = 0; i < im->shnum; i++) {
		s = &im->secs[i];
		memset(&sh, 0, sizeof(sh));
		if (i > 0) {
			sh.sh_name = le32(s->name_off);
			sh.sh_type = le32(s->type);
			sh.sh_flags = le64(s->flags);
			sh.sh_addr = le64(s->addr);
			sh.sh_offset = le64(s->offset);
			sh.sh_size = le64(s->size);
			sh.sh_addralign = le64(s->align);
		}
		pwrite_all(fd, &sh, sizeof(sh), im->shoff + i * sizeof(sh),
		    path);
	}
}

int
main(int argc, char **argv)
{
	static struct opts o;
	static struct image im;
	const char *out;
	size_t i;
	int fd;

	if (argc > 0 && argv[0] != NULL && argv[0][0] != '\0')
		progname = argv[0];
	out = parse_args(&o, argc, argv);
	build(&o, &im);
	layout(&o, &im);

	if ((fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1)
		die_io("open", out);
	write_ehdr(fd, &o, &im, out);
	write_phdrs(fd, &im, out);
	for (i = 1; i < im.nsecs; i++)
		write_sec(fd, &im.secs[i], out);
	write_shdrs(fd, &im, out);
	/* Holes at the end are not written: give the file its length. */
	if (ftruncate(fd, (off_t)im.filesize) == -1)
		die_io("ftruncate", out);
	if (o.do_truncate && ftruncate(fd, (off_t)o.truncate_to) == -1)
		die_io("ftruncate", out);
	if (close(fd) == -1)
		die_io("close", out);
	free(im.shstrtab);
	return 0;
}
