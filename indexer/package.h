/*
 * indexer/package.h: read distribution packages in-process with libarchive.
 *
 * Formats, told apart by content: .deb/.ddeb (an ar archive whose
 * data.tar[.gz|.xz|.zst|.bz2|.lzma] member holds the files), .rpm (a cpio
 * payload compressed with gzip, xz or zstd) and Arch .pkg.tar.* (a
 * compressed tar).  Nothing is run in a child process and nothing is
 * extracted to disk but the one member being inspected, which goes to an
 * unlinked temporary file.
 *
 * Packages are hostile: member names are normalised and names with ".."
 * skipped, every decompressed byte is counted against pkg_limits.max_total
 * (so a decompression bomb stops early, even inside libarchive's own
 * skipping), and a member is inspected only up to max_member bytes.  Memory
 * stays bounded whatever the package size.  Blocking; for worker threads,
 * after elf_init().  Distinct calls share nothing.
 */
#ifndef INDEXER_PACKAGE_H
#define INDEXER_PACKAGE_H

#include <stddef.h>
#include <stdint.h>

#include "indexer/elf.h"

/* Bounds on what one call reads from one package. */
struct pkg_limits {
	uint64_t max_member; /* largest member extracted or inspected */
	uint64_t max_total; /* most decompressed bytes read from one package */
	unsigned max_members; /* most members looked at */
	/*
	 * A member is written no further once less than this percentage of
	 * its file's file system would be free (checked every
	 * PKG_ROOM_STEP bytes); 0: no check.
	 */
	unsigned min_free_pct;
	/*
	 * When a member's write finds no room (that check, or ENOSPC): make
	 * room for bytes more, on the calling thread; 1 when some was made,
	 * and the write is tried once more.  NULL: the member fails.
	 */
	int (*room)(uint64_t bytes, void *arg);
	void *room_arg;
	/*
	 * The package file is still being written (a download): when a read
	 * finds its end, grow(have, grow_arg) is called with the bytes read
	 * so far and blocks until the file holds more (1), is complete (0),
	 * or will not be (-1: the read fails).  NULL: the end is the end.
	 */
	int (*grow)(uint64_t have, void *arg);
	void *grow_arg;
	/*
	 * Threads decoding an xz stream read whole (a .deb's data.tar.xz,
	 * an Arch .pkg.tar.xz), one per xz block at a time, up to 8; the
	 * memory limit (72 MiB) is per thread.  0 or 1: this thread alone.
	 * A stream in one block, or whose blocks do not carry their sizes,
	 * is decoded by one thread whatever this says.
	 */
	unsigned xz_threads;
};

#define PKG_ROOM_STEP (64u << 20)

/*
 * The daemon's limits: members to 4 GiB, 64 GiB read, 1,000,000 members,
 * no free-space check (the daemon sets its min-free-disk).
 */
extern const struct pkg_limits pkg_default_limits;

/* Links followed by pkg_extract() before it gives up. */
#define PKG_LINK_HOPS 8

/* Where the dwz alt files of a distribution live. */
#define PKG_DWZ_DIR "/usr/lib/debug/.dwz/"

enum pkg_member_type { PKG_ELF, PKG_SYMLINK, PKG_OTHER };

/*
 * One member as pkg_scan() reports it; the strings live until the callback
 * returns.  A hard link without data of its own (tar) is reported as a
 * PKG_SYMLINK whose target is the normalised absolute path it links to,
 * which resolves to the same member.  cpio (rpm) brings the data of a file
 * with several names with the last name, which is the one reported as
 * PKG_ELF; the earlier names come as empty PKG_OTHER members (pkg_extract
 * still gives them the data).
 */
struct pkg_member {
	const char *path; /* normalised: "./x" and "x" become "/x" */
	enum pkg_member_type type;
	uint64_t size; /* bytes actually read, not the declared size */
	int64_t mtime;
	const char *link_target; /* PKG_SYMLINK: the target as stored */
	struct elf_info elf; /* PKG_ELF: from elf_read_info() */
	int fd; /* PKG_ELF: its bytes, readable during the callback; else -1 */
	int regular; /* a regular file (with data), ELF or not */
	int is_dwz; /* PKG_ELF under PKG_DWZ_DIR */
};

/* What pkg_scan_stats() skipped, for logs and metrics. */
struct pkg_stats {
	unsigned members; /* headers read */
	unsigned bad_names; /* names with "..", empty or too long: skipped */
	unsigned too_large; /* ELF members over max_member: not inspected */
	unsigned no_room; /* ELF members stopped by min_free_pct: the same */
	unsigned bad_elf; /* ELF magic but unreadable: reported PKG_OTHER */
	unsigned part_read; /* large members read in part, by the xz index */
	uint64_t total; /* decompressed bytes read, or skipped */
	uint64_t decoded; /* of those, the ones really decompressed */
};

/*
 * Walk every member of the package at path, calling cb for each; cb returns
 * 0 to go on, -1 to stop (pkg_scan then returns 0).  A regular member that
 * starts with the ELF magic is copied into an unlinked temporary file in
 * tmpdir (O_TMPFILE, or a memfd when tmpdir is NULL: use that only with a
 * small max_member, as it counts against memory), one member at a time,
 * and read with elf_read_info(); one that fails to read is PKG_OTHER.
 * Returns 0, or -1 with err for a package that cannot be read as a whole:
 * not a package, corrupt or truncated compression, a limit exceeded.
 */
int pkg_scan(const char *path, const char *tmpdir, const struct pkg_limits *lim,
    int (*cb)(const struct pkg_member *m, void *arg), void *arg, char *err,
    size_t errlen);

/* pkg_scan(), also filling stats (which may be NULL). */
int pkg_scan_stats(const char *path, const char *tmpdir,
    const struct pkg_limits *lim,
    int (*cb)(const struct pkg_member *m, void *arg), void *arg,
    struct pkg_stats *stats, char *err, size_t errlen);

/*
 * Extract the member named member (normalised by pkg_member_path()) into
 * out_fd, written with pwrite from offset 0; a regular out_fd is truncated
 * to the member's size.  A symbolic or hard link in the package is followed
 * inside the package (relative targets against the link's directory, at
 * most PKG_LINK_HOPS links; a target above the root is an error).  Only the
 * named member itself is looked up: links among its parent directories are
 * not followed.  When a name occurs twice the first one wins.  Returns 0,
 * ELF_NOTFOUND when the package has no such member, or -1 with err (also
 * for a member that is not a regular file or is over max_member).
 */
int pkg_extract(const char *path, const char *member, int out_fd,
    const struct pkg_limits *lim, char *err, size_t errlen);

/* Another member extracted in the same pass, where the watcher said. */
struct pkg_side {
	int fd; /* written from offset 0 */
	void (*progress)(uint64_t end, void *arg); /* as for the member */
	void *arg;
	int done; /* out: 1 extracted, -1 failed */
};

/*
 * What pkg_extract_watch() tells and asks as it reads, on the calling
 * thread; any callback may be NULL.
 */
struct pkg_watch {
	/* After each piece written: the end of what out_fd holds, holes in. */
	void (*progress)(uint64_t end, void *arg);
	/*
	 * A regular member with data that the pass meets, other than the one
	 * asked for (whose links are not followed), of the size its header
	 * declares: where to extract it, or NULL to pass it by.
	 */
	struct pkg_side *(*side)(const char *member, uint64_t size, void *arg);
	/* Once the member is out, after each later member: 1 to read on. */
	int (*more)(void *arg);
	void *arg;
	/* The size the member asked for declares, before its bytes. */
	void (*size)(uint64_t size, void *arg);
	/* A side's extraction is over (sd->done says how), before the next. */
	void (*side_end)(struct pkg_side *sd, void *arg);
	/*
	 * A symbolic or hard link the pass meets and does not follow, with
	 * its target resolved as pkg_extract() would (a normalised path).
	 */
	void (*link)(const char *member, const char *target, void *arg);
};

/*
 * pkg_extract(), telling watch as it goes, so that readers can follow the
 * extraction and one decompression serves every member the watcher wants.
 * With member NULL (out_fd unused) the pass is for the sides alone and
 * returns 0 when it could read the package.
 */
int pkg_extract_watch(const char *path, const char *member, int out_fd,
    const struct pkg_limits *lim, const struct pkg_watch *watch, char *err,
    size_t errlen);

/*
 * Normalise a member name to an absolute path: leading "./" and "/", empty
 * and "." components and a trailing "/" go ("./usr//bin/" is "/usr/bin",
 * "./" is "/").  Returns 0, or -1 for an empty name, a ".." component, or a
 * result that does not fit in outlen bytes.
 */
int pkg_member_path(const char *name, char *out, size_t outlen);

/*
 * Resolve the link target as stored in the member at link (a normalised
 * path) to a normalised path in out.  -1 when target is empty, climbs above
 * the root or does not fit.
 */
int pkg_link_resolve(const char *link, const char *target, char *out,
    size_t outlen);

#endif /* INDEXER_PACKAGE_H */
