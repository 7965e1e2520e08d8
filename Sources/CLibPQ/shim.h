#ifndef INGEST_CLIBPQ_SHIM_H
#define INGEST_CLIBPQ_SHIM_H

#include <libpq-fe.h>

#endif
