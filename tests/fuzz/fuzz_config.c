/*
 * tests/fuzz/fuzz_config.c: fuzz the configuration parsers (conf/config.h):
 * config_load_file() on a config file, and config_parse_args() with
 * config_load() on a command line.
 *
 * Each input is used both ways.  As a file it is written to one memfd, made
 * once, and read through /proc/self/fd/N.  As a command line it is split at
 * its NUL bytes into at most ARGS_MAX arguments, each in its own heap block
 * of exactly its size, after a fixed argv[0].  config_load() then always
 * runs with no_config set, and a --config FILE in the input is pointed at
 * the memfd, so nothing outside the input is ever read (never
 * CONFIG_DEFAULT_FILE, never a path the fuzzer made up).
 *
 * Besides memory errors and leaks the target aborts when a result breaks
 * the contract: a failure without a message or a message without a
 * failure, a message with a control byte (conf/diag.h promises a hostile file
 * cannot drive the terminal), a value outside its option's bounds, a
 * relative path after config_load(), or a parsed command line that does
 * not point into argv.
 */
#include "conf/config.h"

#include <netinet/in.h>

#include "tests/fuzz/fuzz.h"

#define ARGS_MAX 64
#define DAY (24 * 60 * 60)

static int memfd = -1;
static char memfd_path[64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = fuzz_memfd("fuzz_config: memfd_create");
	snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
	return 0;
}

static void
check_diag(const struct config_diag *diag, int rc)
{
	const unsigned char *m;
	size_t i;

	FUZZ_CHECK(rc == 0 || rc == -1);
	FUZZ_CHECK((rc == -1) == (diag->n > 0));
	for (i = 0; i < diag->n; i++) {
		FUZZ_CHECK(diag->msgs[i] != NULL && diag->msgs[i][0] != '\0');
		for (m = (const unsigned char *)diag->msgs[i]; *m != '\0'; m++)
			FUZZ_CHECK(*m >= 0x20 && *m != 0x7f);
	}
}

static void
check_config(const struct config *cfg)
{
	size_t i;

	FUZZ_CHECK(cfg->nlisten <= 16);
	FUZZ_CHECK(cfg->nlisten == 0 || cfg->listen != NULL);
	for (i = 0; i < cfg->nlisten; i++) {
		const struct config_listen *l = &cfg->listen[i];

		FUZZ_CHECK(memchr(l->text, '\0', sizeof(l->text)) != NULL);
		FUZZ_CHECK((l->addr.ss_family == AF_INET &&
			       l->addrlen == sizeof(struct sockaddr_in)) ||
		    (l->addr.ss_family == AF_INET6 &&
			l->addrlen == sizeof(struct sockaddr_in6)));
	}
	FUZZ_CHECK(cfg->threads <= 256 && cfg->workers <= 256);
	FUZZ_CHECK(cfg->cache_dir == NULL || cfg->cache_dir[0] != '\0');
	FUZZ_CHECK(cfg->scan_dirs.n == 0 || cfg->scan_dirs.v != NULL);
	for (i = 0; i < cfg->scan_dirs.n; i++)
		FUZZ_CHECK(cfg->scan_dirs.v[i] != NULL &&
		    cfg->scan_dirs.v[i][0] != '\0');
	FUZZ_CHECK(cfg->rescan_interval <= 365 * DAY);
	FUZZ_CHECK(cfg->index_map_size >= (1ULL << 20) &&
	    cfg->index_map_size <= (1ULL << 40));
	FUZZ_CHECK(
	    cfg->max_header_size >= 1024 && cfg->max_header_size <= 65536);
	FUZZ_CHECK(
	    cfg->max_connections >= 1 && cfg->max_connections <= 1000000);
	FUZZ_CHECK(
	    cfg->header_timeout >= 1 && cfg->header_timeout <= 365 * DAY);
	FUZZ_CHECK(
	    cfg->keepalive_timeout >= 1 && cfg->keepalive_timeout <= 365 * DAY);
	FUZZ_CHECK(cfg->send_timeout >= 1 && cfg->send_timeout <= 365 * DAY);
	FUZZ_CHECK(cfg->shutdown_timeout <= 3600);
	FUZZ_CHECK(cfg->access_log == 0 || cfg->access_log == 1);
	FUZZ_CHECK(cfg->log_level == CONFIG_LOG_WARN ||
	    cfg->log_level == CONFIG_LOG_INFO ||
	    cfg->log_level == CONFIG_LOG_DEBUG);
}

/* After a successful config_load(): what the daemon may rely on. */
static void
check_loaded(const struct config *cfg)
{
	size_t i;

	FUZZ_CHECK(cfg->nlisten >= 1);
	FUZZ_CHECK(cfg->cache_dir != NULL && cfg->cache_dir[0] == '/');
	for (i = 0; i < cfg->scan_dirs.n; i++)
		FUZZ_CHECK(cfg->scan_dirs.v[i][0] == '/');
}

static void
fuzz_file(void)
{
	struct config cfg;
	struct config_diag diag = { 0 };
	int rc;

	FUZZ_CHECK(config_init(&cfg) == 0);
	rc = config_load_file(&cfg, memfd_path, &diag);
	check_diag(&diag, rc);
	check_config(&cfg);
	config_diag_free(&diag);
	config_free(&cfg);
}

/* 1 when p is one of argv[1..argc). */
static int
in_argv(const char *p, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (p == argv[i])
			return 1;
	return 0;
}

/* 1 when name is an option of the schema. */
static int
is_option(const char *name)
{
	const char *o;
	size_t i;

	for (i = 0; (o = config_option_name(i)) != NULL; i++)
		if (strcmp(o, name) == 0)
			return 1;
	return 0;
}

static void
fuzz_args(int argc, char **argv)
{
	struct config_args args;
	struct config cfg;
	struct config_diag diag = { 0 };
	size_t i;
	int rc;

	rc = config_parse_args(&args, argc, argv, &diag);
	check_diag(&diag, rc);
	FUZZ_CHECK(args.nrest <= (size_t)argc - 1);
	for (i = 0; i < args.nrest; i++)
		FUZZ_CHECK(in_argv(args.rest[i], argc, argv));
	for (i = 0; i < args.npairs; i++) {
		FUZZ_CHECK(is_option(args.pairs[2 * i]));
		FUZZ_CHECK(args.pairs[2 * i + 1] != NULL);
	}
	if (args.config_file != NULL) {
		FUZZ_CHECK(args.config_file[0] != '\0');
		args.config_file = memfd_path;
	}
	args.no_config = 1;
	config_diag_free(&diag);

	FUZZ_CHECK(config_init(&cfg) == 0);
	rc = config_load(&cfg, &args, &diag);
	check_diag(&diag, rc);
	check_config(&cfg);
	if (rc == 0)
		check_loaded(&cfg);
	config_diag_free(&diag);
	config_free(&cfg);
	config_args_free(&args);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[ARGS_MAX + 2];
	const uint8_t *p = data, *end = data + size, *nul;
	int argc = 1, i;

	if (memfd == -1)
		LLVMFuzzerInitialize(NULL, NULL);
	if (fuzz_load(memfd, data, size) == -1)
		return 0;
	fuzz_file();

	argv[0] = "dbgmirrord";
	while (p < end && argc <= ARGS_MAX) {
		size_t n;

		nul = memchr(p, '\0', (size_t)(end - p));
		n = nul != NULL ? (size_t)(nul - p) : (size_t)(end - p);
		if ((argv[argc] = malloc(n + 1)) == NULL)
			break;
		memcpy(argv[argc], p, n);
		argv[argc++][n] = '\0';
		p += n + 1;
	}
	argv[argc] = NULL;
	fuzz_args(argc, argv);
	for (i = 1; i < argc; i++)
		free(argv[i]);
	return 0;
}
