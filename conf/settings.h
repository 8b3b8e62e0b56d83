/*
 * conf/settings.h: struct config, every setting of dbgmirrord and
 * dbgmirror as the options set them, and the types of its parts (listen
 * addresses, upstreams, repositories, lists).
 *
 * Types only, at the bottom of conf/: every file of conf/ may include it,
 * and the rest of the tree has it through conf/config.h.
 */
#ifndef CONF_SETTINGS_H
#define CONF_SETTINGS_H

#include <sys/socket.h>

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

enum config_log_level {
	CONFIG_LOG_WARN = 0,
	CONFIG_LOG_INFO = 1,
	CONFIG_LOG_DEBUG = 2,
};

/*
 * One listen line: "ADDR:PORT", or "ADDR:PORT tls cert=FILE key=FILE
 * [client-ca=FILE] [client-cert=required|optional]" for HTTPS.  With a
 * client-ca, clients must show a certificate it signed (required, the
 * default) or may show one (optional: the access rules decide).
 */
struct config_listen {
	/*
	 * The address, e.g. "127.0.0.1:8002" or "[::1]:8002"; the daemon
	 * writes the port it bound over a port 0 before its loops run.
	 */
	char text[80];
	struct sockaddr_storage addr;
	socklen_t addrlen;
	int tls;
	char *cert, *key, *client_ca; /* absolute; NULL when not TLS */
	int client_cert_optional;
};

struct config_strlist {
	char **v;
	size_t n;
};

/* Which redirects are followed (upstream-redirects, repo-redirects). */
enum config_redirects {
	CONFIG_REDIRECTS_NONE = 0,
	CONFIG_REDIRECTS_SAME_HOST = 1,
	CONFIG_REDIRECTS_ANY = 2,
};

/* Who may use the admin endpoints (/admin/...), or read /metrics, /status. */
enum config_admin {
	CONFIG_ADMIN_NONE = 0,
	CONFIG_ADMIN_LOOPBACK = 1,
	CONFIG_ADMIN_ANY = 2,
};

/*
 * One upstream debuginfod server: "upstream = URL [key=value ...]".  The
 * numbers a line does not set are the global ones (upstream-*-timeout,
 * negative-ttl, error-ttl), filled in by config_load(): until then they
 * are CONFIG_UNSET.
 */
#define CONFIG_UNSET UINT_MAX

struct config_upstream {
	char *url; /* http:// or https://, without a trailing '/' */
	char *name; /* url without user:password@: how it is shown */
	int enabled;
	unsigned connect_timeout; /* seconds */
	unsigned first_byte_timeout; /* seconds */
	unsigned min_rate; /* bytes/s over upstream_stall_timeout */
	unsigned negative_ttl; /* seconds a 404 from all is remembered */
	unsigned error_ttl; /* seconds a failure is remembered */
	struct config_strlist headers; /* "Name: value" sent with requests */
};

#define CONFIG_UPSTREAMS_MAX 32

struct config_objstore;
/*
 * One remote distro repository: "repo = deb URL SUITE COMPONENT...
 * [arch=A,B] [signed-by=FILE] [check-valid-until=no]", "repo = rpm URL
 * [gpgkey=FILE]" or "repo = arch URL NAME" (config_repo_parse).
 */
enum config_repo_type { CONFIG_REPO_DEB, CONFIG_REPO_RPM, CONFIG_REPO_ARCH };

#define CONFIG_REPO_WORDS 16
#define CONFIG_REPO_TEXT 4096

struct config_repo {
	enum config_repo_type type;
	char url[1024]; /* without a trailing '/' */
	char suite[256]; /* deb: the suite; arch: the database name */
	char *components[CONFIG_REPO_WORDS]; /* deb; into text */
	size_t ncomponents;
	char *archs[CONFIG_REPO_WORDS]; /* deb: arch=, else none */
	size_t narchs;
	char keyring[1024]; /* signed-by=, gpgkey= or key=; "" for none */
	int ignore_valid_until; /* deb: check-valid-until=no (snapshots) */
	char name[1100]; /* how it is shown: public URL and suite */
	char text[CONFIG_REPO_TEXT]; /* words pointed to above */
};

/* Where one value of an option came from (config_where). */
struct config_origin {
	const char *name; /* the option's */
	size_t idx; /* in its list; 0 for a single value */
	char *where; /* "FILE:LINE", "command line", "default"... */
};

struct config {
	char *config_file; /* the file read, NULL when none */
	struct config_origin *origins; /* in the order set */
	size_t norigins;

	struct config_listen *listen; /* listen ADDR:PORT, repeatable */
	size_t nlisten;
	unsigned threads; /* event-loop threads; 0 = one per CPU */
	unsigned workers; /* worker-pool threads; 0 = one per CPU */

	char *cache_dir; /* absolute */
	char *upload_dir; /* absolute: uploads, never evicted */
	struct config_strlist scan_dirs; /* absolute, repeatable */
	struct config_strlist source_roots; /* absolute; where /source may be */
	unsigned rescan_interval; /* seconds; 0 = never */
	struct config_strlist scan_packages; /* absolute, repeatable */
	unsigned package_jobs; /* packages read at once; 0 = one per CPU */
	unsigned package_coextract; /* other members per extraction pass */
	int archive_full_path; /* 1: X-DEBUGINFOD-ARCHIVE is the whole path */
	uint64_t index_map_size; /* bytes */

	unsigned max_header_size; /* bytes of request line + headers */
	unsigned max_connections; /* open client connections, all threads */
	unsigned header_timeout; /* seconds to receive a request head */
	unsigned keepalive_timeout; /* seconds an idle connection is kept */
	unsigned send_timeout; /* seconds without send progress */
	unsigned shutdown_timeout; /* seconds to finish responses on exit */

	int access_log; /* 1: one line per request */
	char *access_log_file; /* absolute; NULL: the lines go to stderr */
	enum config_log_level log_level;

	struct config_upstream *upstreams; /* upstream, repeatable */
	size_t nupstreams;
	int upstreams_from_env; /* 1: taken from DEBUGINFOD_URLS */
	struct config_strlist upstream_headers; /* "URL|* Name: value" */
	unsigned upstream_connect_timeout; /* seconds */
	unsigned upstream_first_byte_timeout; /* seconds */
	unsigned upstream_stall_timeout; /* seconds without a body byte */
	unsigned upstream_min_rate; /* bytes/s a transfer must keep up */
	enum config_redirects upstream_redirects;
	unsigned upstream_timeout; /* seconds for a whole transfer */
	unsigned upstream_retries; /* after a transport error */
	unsigned breaker_failures; /* in a row that open the breaker */
	unsigned breaker_backoff; /* seconds before the first probe */
	unsigned breaker_backoff_max; /* seconds; the doubling stops here */
	unsigned max_forwarded_for; /* X-Forwarded-For entries accepted */
	unsigned metadata_timeout; /* seconds of a /metadata query */
	char *ca_file; /* trusted besides the system store; NULL: none */
	char *proxy; /* NULL: from the environment; "": none */
	char *user_agent; /* NULL: dbgmirror/VERSION */
	uint64_t max_object_size; /* bytes of one fetched object */
	unsigned max_fills; /* upstream transfers in flight */

	struct config_strlist repos; /* repo lines, repeatable */
	enum config_redirects repo_redirects; /* followed by their fetches */
	unsigned repo_refresh; /* seconds between refreshes; 0 = never */
	unsigned repo_retry; /* first wait after a failed refresh, seconds */
	unsigned repo_ready_timeout; /* for the first refreshes; 0 = none */
	uint64_t repo_cache_size; /* bytes of downloaded packages kept */
	unsigned repo_downloads; /* package downloads in flight at once */

	uint64_t cache_size; /* bytes of cached blobs; 0 = no cap */
	unsigned
	    cache_high_watermark; /* % of cache-size that starts eviction */
	unsigned cache_low_watermark; /* % it evicts down to */
	unsigned min_free_disk; /* % of the file system kept free */
	unsigned negative_ttl; /* seconds; per upstream too */
	unsigned error_ttl; /* seconds; per upstream too */
	unsigned negative_max; /* entries kept at most; 0: no bound */
	unsigned misses_max; /* ids in the missing-id report; 0: none kept */
	enum config_admin admin_access;
	enum config_admin metrics_access; /* who may read /metrics */
	char *admin_token_file; /* NULL: admin requests need no token */

	struct config_objstore *store; /* NULL: none (conf/objstore.h) */
	unsigned store_timeout; /* seconds to a store lookup's first byte */
	unsigned store_upload_queue; /* uploads waiting at most */
	uint64_t store_multipart_size; /* bytes of a part; and the threshold */
	char *token_file; /* hashed bearer tokens with scopes; NULL: none */
	struct config_strlist access; /* "CLASS RULE ..." lines */
	struct config_strlist trusted_proxies; /* CIDRs whose XFF counts */
	uint64_t max_upload_size; /* bytes of one uploaded file */
	uint64_t upload_size; /* bytes all uploaded files may hold */
	char *user; /* NULL or "": stay who started the daemon */
	int sandbox; /* 1: fence in the parsing workers */

	/* /symbolicate (daemon/symbolicate.h) and its symbol tables. */
	unsigned symbolicate_builds; /* tables built at once */
	unsigned symbolicate_max_frames; /* addresses of one request */
	unsigned symbolicate_max_modules; /* modules of one request */
	uint64_t symbolicate_max_body; /* bytes of a POST body */
	unsigned symbolicate_timeout_max; /* seconds a request may wait */
	unsigned symbolicate_open_tables; /* tables kept open at most */
	uint64_t symbolicate_open_bytes; /* bytes they map at most */
};

#endif /* CONF_SETTINGS_H */
