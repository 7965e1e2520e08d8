#ifndef INGEST_CCURL_SHIM_H
#define INGEST_CCURL_SHIM_H

#include <curl/curl.h>

/* curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: these are
   the same calls, one for each kind of argument Ingest passes. */
static inline CURLcode ccurl_setopt_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode ccurl_setopt_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode ccurl_setopt_pointer(CURL *curl, CURLoption option, void *value) {
    return curl_easy_setopt(curl, option, value);
}
typedef size_t (*ccurl_data_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode ccurl_setopt_callback(CURL *curl, CURLoption option, ccurl_data_callback callback) {
    return curl_easy_setopt(curl, option, callback);
}
static inline CURLcode ccurl_response_code(CURL *curl, long *code) {
    return curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, code);
}

#endif
