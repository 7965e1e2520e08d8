#ifndef INGEST_COPENSSL_SHIM_H
#define INGEST_COPENSSL_SHIM_H

/* Only SHA-256, through OpenSSL's EVP interface (the one OpenSSL 3 recommends). */
#include <openssl/evp.h>

#endif
