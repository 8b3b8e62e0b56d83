/*
 * daemon/spawn.h: run a helper program on behalf of a fenced worker.
 *
 * The worker threads may not create processes or execute anything
 * (daemon/sandbox.h), yet checking a repository's signature means running
 * gpgv.  So one thread started before the workers, outside their fence,
 * runs such programs for them, one at a time, and only those named in
 * spawn.c's list: a subverted parser can make it run gpgv on files of its
 * choice, nothing else.
 */
#ifndef DBGMIRROR_SPAWN_H
#define DBGMIRROR_SPAWN_H

/*
 * Start the spawning thread, which first calls init (NULL: nothing); before
 * the worker pool.  0, or -1 with errno.  Without it (tests, the CLI),
 * spawn_wait() runs the program itself.
 */
int spawn_start(void (*init)(void));

/*
 * Run argv[0], which must be on the list, found in PATH, with argv, its
 * standard input and error /dev/null and its standard output out_fd; wait
 * for it.  0 with its wait status in *status, or an errno value.
 */
int spawn_wait(char *const argv[], int out_fd, int *status);

#endif
