/* doca_log through libdoca: which records a backend shows as its limits and the global ones change.
 * Every record reaches a buffer backend whose flush callback prints it after "buf| ". */

#include <stdio.h>

#include <doca_error.h>
#include <doca_log.h>

DOCA_LOG_REGISTER(LOG::LEVELS);

static void flushed(char *record)
{
	printf("buf| %s", record);
}

static void step(const char *what, doca_error_t result)
{
	printf("%s: %s\n", what, doca_error_get_name(result));
}

int main(void)
{
	static char buf[512];
	struct doca_log_backend *backend;

	step("create", doca_log_backend_create_with_buf(buf, sizeof(buf), flushed, &backend));
	printf("limits: %u %u\n", doca_log_level_get_global_lower_limit(), doca_log_level_get_global_upper_limit());
	DOCA_LOG_INFO("info %d", 1);
	DOCA_LOG_DBG("debug %d", 1); /* below the default lower limit (INFO) */

	step("global lower", doca_log_level_set_global_lower_limit(DOCA_LOG_LEVEL_DEBUG));
	DOCA_LOG_DBG("debug %d", 2);

	step("own lower", doca_log_backend_set_level_lower_limit(backend, DOCA_LOG_LEVEL_INFO));
	step("strict", doca_log_backend_set_level_lower_limit_strict(backend));
	step("global lower", doca_log_level_set_global_lower_limit(DOCA_LOG_LEVEL_TRACE));
	DOCA_LOG_DBG("debug %d", 3); /* the backend's strict limit wins */

	step("global upper", doca_log_level_set_global_upper_limit(DOCA_LOG_LEVEL_ERROR));
	DOCA_LOG_CRIT("crit %d", 1); /* more severe than the upper limit */
	DOCA_LOG_ERR("error %d", 1);

	step("bad level", doca_log_level_set_global_lower_limit(55));
	step("unknown source", doca_log_unregister_source(12345));
	step("sdk on app backend", doca_log_backend_set_sdk_level(backend, DOCA_LOG_LEVEL_INFO));
	DOCA_LOG_ERR("bytes kept: %s", "\xff\xfe"); /* not UTF-8: written as they are */
	return 0;
}
