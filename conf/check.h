/*
 * conf/check.h: dbgmirrord --check-config's look at the files and
 * directories the configuration names (conf/check.c).
 */
#ifndef CONF_CHECK_H
#define CONF_CHECK_H

#include <stddef.h>

#include "conf/diag.h"
#include "conf/settings.h"

/*
 * Check every file and directory cfg names as the daemon's user will find
 * them: the cache directory (and the upload directory, with a token-file)
 * writable or makeable, the scan directories present and readable, the
 * token, admin-token, CA, certificate, key, keyring and store key files
 * readable.  As root with "user" set, as that user.  Each problem goes to
 * diag as "WHERE: OPTION: PATH: what", WHERE being the file and line that
 * set it; returns how many.  Only before any thread is started.
 */
size_t config_check_paths(const struct config *cfg, struct config_diag *diag);

#endif /* CONF_CHECK_H */
