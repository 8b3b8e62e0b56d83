/*
 * daemon/sandbox.c: the fence around the worker threads that parse hostile
 * input (daemon/sandbox.h).
 *
 * Threads, not a helper process.  OpenBSD httpd's privilege separation
 * would run the parsers in a process of their own; here their results go
 * straight into LMDB write transactions and the shared pool's completions,
 * and a process boundary would mean a protocol for all of that.  Linux can
 * fence one thread instead: a seccomp filter installed without TSYNC, and a
 * Landlock domain, bind the thread that installs them (and threads it
 * creates), not its siblings.  So each worker of the pool fences itself in
 * when it starts (pool_new_init), and the event-loop threads (which accept
 * and connect upstream) and the main thread (which reloads and exits) stay
 * as they are.  Every job that reads a package, an ELF file or a fill runs
 * on a worker, so every parser of outside input runs fenced.
 *
 * Two layers, both only ever narrowing what the thread may do:
 *
 *  - Landlock: files.  Writes only beneath the cache directory and the
 *    upload directory, when it exists (no file made or changed anywhere
 *    else: nothing staged in /tmp, nothing else the user owns touched),
 *    no device node, fifo or socket made, nothing
 *    executed.  Reads are not fenced: the scan follows symbolic links to
 *    files anywhere (they are indexed and served under their real path),
 *    so what a worker may read is what the daemon's user may read.  A
 *    refused open fails with EACCES, which the parser reports like any
 *    unwritable file.  Kernels without Landlock (before 5.13, or with it
 *    disabled) get a warning at start-up and only the second layer.
 *
 *  - seccomp: system calls that no parser needs: sockets, exec, new
 *    processes (clone without CLONE_THREAD), ptrace and other processes'
 *    memory, mounts and namespaces, module loading, keyrings, bpf,
 *    perf_event_open.  Such a call is trapped: the SIGSYS handler writes
 *    one line to stderr, counts it (dbgmirror_sandbox_refused_total),
 *    and makes the call fail with EPERM, so the job fails like any other
 *    and the daemon carries on.  (Architectures whose registers the
 *    handler does not know get EPERM without the line and the count.)
 *    The list is a deny list: an allow list would have to follow every
 *    system call glibc, libelf, libarchive, LMDB and the sanitizers make.
 *    Changing ids is not on it: after the drop to the daemon's user it
 *    fails anyway, and glibc runs setuid() on every thread.
 *
 * What this does not stop: a worker shares the process's memory and
 * descriptors, so code running in a subverted parser can still write to
 * descriptors opened before (the index, client sockets).  Only a separate
 * process would, at the price above.
 */
#include "daemon/sandbox.h"

#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/metrics.h"

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif

#if defined(__x86_64__) || defined(__aarch64__)
#define SANDBOX_TRAP 1 /* the SIGSYS handler can set the return value */
#else
#define SANDBOX_TRAP 0
#endif

struct sandbox {
	int ruleset; /* Landlock rule set, -1: none */
	scmp_filter_ctx filter;
	pthread_mutex_t lock; /* seccomp_load() on one thread at a time */
};

/* Once per process: the probe (sandbox_probe) has run. */
static atomic_flag probed = ATOMIC_FLAG_INIT;

/* ------------------------------------------------------------- Landlock */

/* Everything Landlock ABI abi can refuse that a file tree needs. */
static uint64_t
fs_handled(int abi)
{
	uint64_t m = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;

	if (abi >= 2)
		m |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		m |= LANDLOCK_ACCESS_FS_TRUNCATE;
	return m;
}

/* Allow access beneath path; a path that does not exist is skipped. */
static int
ruleset_allow(int ruleset, const char *path, uint64_t access)
{
	struct landlock_path_beneath_attr pb;
	int rc;

	if ((pb.parent_fd = open(path, O_PATH | O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : -1;
	pb.allowed_access = access;
	rc = (int)syscall(SYS_landlock_add_rule, ruleset,
	    LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	close(pb.parent_fd);
	return rc;
}

/*
 * The rule set for dirs (NULL-terminated; a missing one is skipped), -1
 * when the kernel has no Landlock.
 */
static int
ruleset_new(const char *const *dirs, char *err, size_t errlen)
{
	struct landlock_ruleset_attr attr;
	size_t i;
	int abi, fd;

	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1) {
		log_warnx("%s: this kernel has no Landlock (%s): the parsers' "
			  "file access is not fenced, only their system calls",
		    __func__, strerror(errno));
		return -1;
	}
	memset(&attr, 0, sizeof(attr));
	/* Everything but reading is refused unless a rule allows it. */
	attr.handled_access_fs = fs_handled(abi) &
	    ~(LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR);
	fd = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	if (fd == -1) {
		snprintf(err, errlen, "landlock_create_ruleset: %s",
		    strerror(errno));
		return -2;
	}
	/* The cache and uploads: all but exec and special files. */
	for (i = 0; dirs[i] != NULL; i++) {
		if (ruleset_allow(fd, dirs[i],
			attr.handled_access_fs &
			    ~(LANDLOCK_ACCESS_FS_EXECUTE |
				LANDLOCK_ACCESS_FS_MAKE_CHAR |
				LANDLOCK_ACCESS_FS_MAKE_BLOCK |
				LANDLOCK_ACCESS_FS_MAKE_FIFO |
				LANDLOCK_ACCESS_FS_MAKE_SOCK)) == -1) {
			snprintf(err, errlen, "landlock_add_rule %s: %s",
			    dirs[i], strerror(errno));
			close(fd);
			return -2;
		}
	}
	return fd;
}

/* -------------------------------------------------------------- seccomp */

static void
sigsys_cb(int sig, siginfo_t *si, void *uc_arg)
{
	static const char head[] = "dbgmirrord: sandbox: refused system call ";
	static const char tail[] = " in a worker thread\n";
	ucontext_t *uc = uc_arg;
	char line[sizeof(head) + sizeof(tail) + 12], num[12];
	int save = errno, n = si->si_syscall, k = 0;
	size_t len = sizeof(head) - 1;
	ssize_t w;

	memcpy(line, head, len);
	do
		num[k++] = (char)('0' + n % 10);
	while ((n /= 10) > 0 && k < (int)sizeof(num));
	while (k > 0)
		line[len++] = num[--k];
	memcpy(line + len, tail, sizeof(tail) - 1);
	len += sizeof(tail) - 1;
	/* Async-signal-safe, and a line lost is all that can go wrong. */
	w = write(STDERR_FILENO, line, len);
	(void)w;
	metrics_sandbox_refused();
#if defined(__x86_64__)
	uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
	uc->uc_mcontext.regs[0] = (unsigned long long)-EPERM;
#endif
	errno = save;
}

static scmp_filter_ctx
filter_new(char *err, size_t errlen)
{
	static const char *const denied[] = { "socket", "socketpair", "connect",
		"bind", "listen", "accept", "accept4", "execve", "execveat",
		"fork", "vfork", "ptrace", "process_vm_readv",
		"process_vm_writev", "mount", "umount2", "pivot_root", "chroot",
		"unshare", "setns", "bpf", "perf_event_open", "keyctl",
		"add_key", "request_key", "init_module", "finit_module",
		"delete_module", "kexec_load", "reboot", "userfaultfd",
		"personality" };
	const uint32_t deny =
	    SANDBOX_TRAP ? SCMP_ACT_TRAP : SCMP_ACT_ERRNO(EPERM);
	scmp_filter_ctx ctx;
	size_t i;
	int nr, rc = 0;

	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL) {
		snprintf(err, errlen, "seccomp_init failed");
		return NULL;
	}
	for (i = 0; i < sizeof(denied) / sizeof(denied[0]) && rc == 0; i++)
		if ((nr = seccomp_syscall_resolve_name(denied[i])) !=
		    __NR_SCMP_ERROR)
			rc = seccomp_rule_add(ctx, deny, nr, 0);
	/* Threads may be made, processes not; clone3 hides its flags. */
	if (rc == 0)
		rc = seccomp_rule_add(ctx, deny, SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
		    SCMP_SYS(clone3), 0);
	if (rc != 0) {
		snprintf(err, errlen, "seccomp_rule_add: %s", strerror(-rc));
		seccomp_release(ctx);
		return NULL;
	}
	return ctx;
}

/* ------------------------------------------------------------- the API */

struct sandbox *
sandbox_new(const char *cache_dir, const char *upload_dir, char *err,
    size_t errlen)
{
	const char *dirs[] = { cache_dir, upload_dir, NULL };
	struct sigaction sa;
	struct sandbox *sb;

	if ((sb = calloc(1, sizeof(*sb))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&sb->lock, NULL);
	if ((sb->ruleset = ruleset_new(dirs, err, errlen)) == -2 ||
	    (sb->filter = filter_new(err, errlen)) == NULL) {
		sandbox_free(sb);
		return NULL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sigsys_cb;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (SANDBOX_TRAP && sigaction(SIGSYS, &sa, NULL) == -1) {
		snprintf(err, errlen, "SIGSYS: %s", strerror(errno));
		sandbox_free(sb);
		return NULL;
	}
	return sb;
}

void
sandbox_free(struct sandbox *sb)
{
	if (sb == NULL)
		return;
	if (sb->ruleset >= 0)
		close(sb->ruleset);
	if (sb->filter != NULL)
		seccomp_release(sb->filter);
	pthread_mutex_destroy(&sb->lock);
	free(sb);
}

void
sandbox_enter(void *arg)
{
	struct sandbox *sb = arg;
	int rc;

	/* Both layers need it when the thread has no CAP_SYS_ADMIN. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		log_warn("%s: no-new-privileges", __func__);
	if (sb->ruleset >= 0 &&
	    syscall(SYS_landlock_restrict_self, sb->ruleset, 0) == -1)
		log_warn("%s: landlock_restrict_self", __func__);
	pthread_mutex_lock(&sb->lock);
	rc = seccomp_load(sb->filter);
	pthread_mutex_unlock(&sb->lock);
	if (rc != 0)
		log_warnx("%s: seccomp_load: %s", __func__, strerror(-rc));
}

/* The probe's verdict on rc (0: it was done, -1: refused with errno). */
static void
probe_say(const char *what, int rc)
{
	log_warnx("sandbox probe: %s: %s", what,
	    rc == 0 ? "ALLOWED" : strerror(errno));
}

void
sandbox_probe(void)
{
	static const char req[] = "GET /sandbox-probe HTTP/1.0\r\n\r\n";
	const char *probe = getenv("DBGMIRROR_TEST_SANDBOX_PROBE");
	struct sockaddr_in sin;
	int fd, rc;

	if (probe == NULL || *probe == '\0' ||
	    atomic_flag_test_and_set(&probed))
		return;
	if (strncmp(probe, "connect:", 8) == 0) {
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = htons((uint16_t)atoi(probe + 8));
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		rc = fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd != -1) {
			rc = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
			if (rc == 0 && write(fd, req, sizeof(req) - 1) == -1)
				rc = -1;
			close(fd);
		}
		probe_say(probe, rc == -1 ? -1 : 0);
	} else if (strncmp(probe, "write:", 6) == 0) {
		rc = fd = open(probe + 6, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
		if (fd != -1)
			close(fd);
		probe_say(probe, rc == -1 ? -1 : 0);
	} else if (strncmp(probe, "exec:", 5) == 0) {
		char *const argv[] = { (char *)probe + 5, NULL };

		execv(probe + 5, argv);
		probe_say(probe, -1);
	} else
		log_warnx("sandbox probe: %s: not connect:, write: or exec:",
		    probe);
}
