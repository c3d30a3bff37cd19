/* Per-session connection caches for the HTTP client.
 *
 * A multi-turn session keeps to one connection, as a chat client holding
 * its own connection would: each session in flight gets a libcurl share
 * object holding only its own connection cache (CURL_LOCK_DATA_CONNECT),
 * so its turns reuse the connection its first turn opened and no other
 * session's.  The share lives while the session's requests use it and is
 * cleaned up (closing the connection) when the session is over and its
 * last request has ended. */
#ifndef TP_HTTP_SHARE_H
#define TP_HTTP_SHARE_H

#include <stdint.h>

#include <curl/curl.h>

#include "util/tp_u64map.h"

/* The session's share, made on its first request; one more request uses
 * it.  NULL when out of memory (the request then goes without one). */
CURLSH *tp__http_share_take(tp_u64map *shares, uint64_t session);
/* A request of the session has ended (its easy handle is cleaned up). */
void tp__http_share_put(tp_u64map *shares, uint64_t session);
/* The session is over: its share goes once no request uses it. */
void tp__http_share_end(tp_u64map *shares, uint64_t session);
/* Every share (no request may use any). */
void tp__http_shares_free(tp_u64map *shares);

#endif
