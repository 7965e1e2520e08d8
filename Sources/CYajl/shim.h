#ifndef INGEST_CYAJL_SHIM_H
#define INGEST_CYAJL_SHIM_H

#include <yajl/yajl_parse.h>
#include <yajl/yajl_version.h>

/* yajl_config is variadic, which Swift cannot call; every option Ingest sets is a
   plain on/off flag, so one fixed-arity wrapper covers them all. */
static inline int cyajl_config(yajl_handle handle, yajl_option option, int enabled) {
    return yajl_config(handle, option, enabled);
}

#endif
