/*
 * daemon/spawn.c: the thread that runs helper programs for fenced workers
 * (daemon/spawn.h).
 *
 * A request lives on its caller's stack: the caller queues it and sleeps
 * on done; the thread takes requests in order, runs each with
 * posix_spawnp and waitpid, and wakes its caller.  The thread is never
 * stopped: it sleeps in the queue until the process exits, with every
 * signal blocked, so that none is ever delivered to it (at shutdown the
 * main thread swaps the dispositions of the signals it handled with them
 * blocked on its own thread only: daemon/main.c).  Its programs start
 * with no signal blocked and the usual dispositions.
 */
#include "daemon/spawn.h"

#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>

extern char **environ;

/* What may be run. */
static const char *const programs[] = { "gpgv" };

struct req {
	char *const *argv;
	int out_fd;
	int status;
	int err;
	int done;
	struct req *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued = PTHREAD_COND_INITIALIZER;
static pthread_cond_t finished = PTHREAD_COND_INITIALIZER;
static struct req *head, *tail; /* under mu */
static int started;

/* Run one request: its err, and status when err is 0. */
static void
run(struct req *r)
{
	static const int reset[] = { SIGPIPE, SIGHUP, SIGINT, SIGTERM,
		SIGUSR1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, def;
	pid_t pid;
	size_t i;
	int st;

	sigemptyset(&none);
	sigemptyset(&def);
	for (i = 0; i < sizeof(reset) / sizeof(reset[0]); i++)
		sigaddset(&def, reset[i]);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &def);
	posix_spawnattr_setflags(&attr,
	    POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, r->out_fd, 1);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	r->err = posix_spawnp(&pid, r->argv[0], &fa, &attr, r->argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (r->err != 0)
		return;
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR) {
			r->err = errno;
			return;
		}
	r->status = st;
}

static void *
spawner(void *arg)
{
	void (*init)(void) = *(void (**)(void))arg;
	struct req *r;

	if (init != NULL)
		init();
	pthread_mutex_lock(&mu);
	for (;;) {
		while (head == NULL)
			pthread_cond_wait(&queued, &mu);
		r = head;
		if ((head = r->next) == NULL)
			tail = NULL;
		pthread_mutex_unlock(&mu);
		run(r);
		pthread_mutex_lock(&mu);
		r->done = 1;
		pthread_cond_broadcast(&finished);
	}
	return NULL;
}

int
spawn_start(void (*init)(void))
{
	static void (*init_fn)(void);
	sigset_t all, old;
	pthread_t t;
	int rc;

	init_fn = init;
	/* It inherits the mask: every signal blocked from its first moment. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&t, NULL, spawner, &init_fn);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	pthread_detach(t);
	started = 1;
	return 0;
}

int
spawn_wait(char *const argv[], int out_fd, int *status)
{
	struct req r = { argv, out_fd, 0, 0, 0, NULL };
	size_t i;

	for (i = 0; i < sizeof(programs) / sizeof(programs[0]); i++)
		if (strcmp(argv[0], programs[i]) == 0)
			break;
	if (i == sizeof(programs) / sizeof(programs[0]))
		return EPERM;
	if (!started) {
		run(&r);
	} else {
		pthread_mutex_lock(&mu);
		if (tail != NULL)
			tail->next = &r;
		else
			head = &r;
		tail = &r;
		pthread_cond_signal(&queued);
		while (!r.done)
			pthread_cond_wait(&finished, &mu);
		pthread_mutex_unlock(&mu);
	}
	*status = r.status;
	return r.err;
}
