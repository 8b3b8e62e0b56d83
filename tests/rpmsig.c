/*
 * tests/rpmsig.c: give every file of an RPM the same IMA signature.
 *
 *   rpmsig IN OUT HEX
 *
 * Copies IN to OUT with a FILESIGNATURES entry (tag 5090, one hex string
 * per file; "" for a symbolic link, as rpm signs them) added to the main
 * header, so that the tests can check
 * X-DEBUGINFOD-IMASIGNATURE without keys, evmctl or an rpm built with IMA
 * support.  The signature header's digests no longer match the new main
 * header; nothing the tests run checks them.  A test tool: it trusts IN.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_BASENAMES 1117
#define TAG_FILESIGNATURES 5090
#define TAG_FILELINKTOS 1036

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void
put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

int
main(int argc, char **argv)
{
	unsigned char *in, *out, *idx, *p;
	const char *link = NULL;
	size_t len, cap, sig, mainoff, n = 0, olen, i, hexlen, added = 0;
	uint32_t nindex, hsize, files = 0, k;
	FILE *fp;

	if (argc != 4 || (fp = fopen(argv[1], "rb")) == NULL) {
		fprintf(stderr, "usage: rpmsig IN OUT HEX\n");
		return 2;
	}
	cap = 1 << 20;
	in = malloc(cap);
	for (len = 0;
	     in != NULL && (n = fread(in + len, 1, cap - len, fp)) > 0;) {
		len += n;
		if (len == cap && (in = realloc(in, cap *= 2)) == NULL)
			break;
	}
	fclose(fp);
	if (in == NULL || len < 96 + 16)
		return 1;
	/* The signature header, padded to 8 bytes, then the main header. */
	sig = 96 + 16 + 16 * (size_t)be32(in + 96 + 8) + be32(in + 96 + 12);
	mainoff = (sig + 7) & ~(size_t)7;
	nindex = be32(in + mainoff + 8);
	hsize = be32(in + mainoff + 12);
	idx = in + mainoff + 16;
	for (i = 0; i < nindex; i++) {
		if (be32(idx + 16 * i) == TAG_BASENAMES)
			files = be32(idx + 16 * i + 12);
		if (be32(idx + 16 * i) == TAG_FILELINKTOS)
			link = (const char *)idx + 16 * (size_t)nindex +
			    be32(idx + 16 * i + 8);
	}
	hexlen = strlen(argv[3]) + 1;
	/* Each file's string: the signature, or "" for a link. */
	for (k = 0, p = (unsigned char *)link; k < files; k++) {
		added += p == NULL || *p == '\0' ? hexlen : 1;
		if (p != NULL)
			p += strlen((const char *)p) + 1;
	}
	olen = len + 16 + added;
	if (files == 0 || (out = malloc(olen)) == NULL)
		return 1;
	p = out;
	memcpy(p, in, mainoff + 8);
	put32(p + mainoff + 8, nindex + 1);
	put32(p + mainoff + 12, hsize + (uint32_t)added);
	p += mainoff + 16;
	memcpy(p, idx, 16 * (size_t)nindex);
	p += 16 * (size_t)nindex;
	put32(p, TAG_FILESIGNATURES);
	put32(p + 4, 8);
	put32(p + 8, hsize);
	put32(p + 12, files);
	p += 16;
	memcpy(p, idx + 16 * (size_t)nindex, hsize);
	p += hsize;
	for (k = 0; k < files; k++) {
		if (link != NULL && *link != '\0') {
			*p++ = '\0';
		} else {
			memcpy(p, argv[3], hexlen);
			p += hexlen;
		}
		if (link != NULL)
			link += strlen(link) + 1;
	}
	n = (size_t)(idx + 16 * (size_t)nindex + hsize - in);
	memcpy(p, in + n, len - n);
	p += len - n;
	if ((fp = fopen(argv[2], "wb")) == NULL ||
	    fwrite(out, 1, (size_t)(p - out), fp) != (size_t)(p - out) ||
	    fclose(fp) != 0)
		return 1;
	free(in);
	free(out);
	return 0;
}
