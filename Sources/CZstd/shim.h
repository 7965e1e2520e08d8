#ifndef INGEST_CZSTD_SHIM_H
#define INGEST_CZSTD_SHIM_H

#include <zstd.h>

#endif
