/* What a failed libcurl transfer means: its class and a message naming
 * what the user can check; and which failures a request is re-sent after. */
#include "tp_http_internal.h"

#include <stdio.h>
#include <string.h>

/* libcurl's reason: its error buffer, or the code's phrase. */
static const char *curl_reason(const tp_http_req *r, CURLcode code) {
  return r->errbuf[0] ? r->errbuf : curl_easy_strerror(code);
}

/* Connected, but the TLS handshake never completed: the port may speak
 * plain HTTP (or something else).  A plaintext server answers a
 * ClientHello with an error page ("wrong version number") or waits for
 * the end of a request line that never comes (a timeout). */
static bool tls_not_spoken(const tp_http *h, const tp_http_req *r, CURLcode code) {
  curl_off_t connect_us = 0, tls_us = 0;
  if (!h->tls) return false;
  curl_easy_getinfo(r->easy, CURLINFO_CONNECT_TIME_T, &connect_us);
  curl_easy_getinfo(r->easy, CURLINFO_APPCONNECT_TIME_T, &tls_us);
  if (code == CURLE_SSL_CONNECT_ERROR) return true;
  return connect_us > 0 && tls_us == 0 &&
         (code == CURLE_OPERATION_TIMEDOUT || code == CURLE_RECV_ERROR || code == CURLE_GOT_NOTHING);
}

tp_error_class tp__http_classify(const tp_http *h, const tp_http_req *r, CURLcode code, char *msg,
                                 size_t msglen) {
  const char *why = curl_reason(r, code);
  /* Messages name the whole URL the request used (scheme, host, port,
   * path): the one thing a user can compare with what they meant. */
  const char *eff = NULL;
  curl_easy_getinfo(r->easy, CURLINFO_EFFECTIVE_URL, &eff);
  /* Without the query, which may hold a key (?key=...). */
  char auth[512];
  snprintf(auth, sizeof(auth), "%.*s", eff ? (int)TP_MIN(strcspn(eff, "?"), 400) : 0, eff ? eff : "");
  if (!auth[0]) snprintf(auth, sizeof(auth), "%s", h->authority);
  if (tls_not_spoken(h, r, code)) {
    snprintf(msg, msglen,
             "TLS handshake with %s failed: %s (the port may not speak TLS: if it serves plain HTTP, use "
             "http:// in --url)",
             auth, why);
    return TP_HTTP_ERRCLASS_TLS;
  }
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
      snprintf(msg, msglen, "cannot connect to %s: %s", auth, why);
      return TP_ERRCLASS_CONNECT;
    case CURLE_OPERATION_TIMEDOUT:
      snprintf(msg, msglen, "request to %s timed out: %s (see --request-timeout)", auth, why);
      return TP_ERRCLASS_TIMEOUT;
    case CURLE_PEER_FAILED_VERIFICATION:
      snprintf(msg, msglen, "certificate verification failed for %s: %s (use --ca-file FILE, or --insecure)",
               auth, why);
      return TP_HTTP_ERRCLASS_TLS;
    case CURLE_SSL_CACERT_BADFILE:
      snprintf(msg, msglen, "cannot use the CA certificates for %s: %s (check --ca-file)", auth, why);
      return TP_HTTP_ERRCLASS_TLS;
    case CURLE_SSL_CERTPROBLEM:
      snprintf(msg, msglen, "client certificate problem with %s: %s (check --cert and --key)", auth, why);
      return TP_HTTP_ERRCLASS_TLS;
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_USE_SSL_FAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
      snprintf(msg, msglen, "TLS error with %s: %s", auth, why);
      return TP_HTTP_ERRCLASS_TLS;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      snprintf(msg, msglen, "connection to %s lost: %s", auth, why);
      return TP_ERRCLASS_CONNECT;
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      snprintf(msg, msglen, "HTTP/2 stream to %s reset: %s", auth, why);
      return TP_ERRCLASS_STREAM_RESET;
    case CURLE_ABORTED_BY_CALLBACK:
    case CURLE_WRITE_ERROR: snprintf(msg, msglen, "cancelled"); return TP_ERRCLASS_CANCELLED;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_WEIRD_SERVER_REPLY:
      /* An HTTP/2-only server (a gRPC port) answers an HTTP/1.1 request
       * with binary frames (SETTINGS, GOAWAY), which libcurl reads as
       * HTTP/0.9 or as a reply it cannot parse. */
      if (strstr(why, "HTTP/0.9") || code == CURLE_WEIRD_SERVER_REPLY) {
        snprintf(msg, msglen,
                 "%s did not answer in HTTP/1.x (%s): the port seems to speak gRPC/HTTP2; for Triton's gRPC "
                 "port use --service-kind triton, else give the server's HTTP port in --url",
                 auth, why);
        return TP_ERRCLASS_PROTOCOL;
      }
      snprintf(msg, msglen, "bad HTTP exchange with %s: %s", auth, why);
      return TP_ERRCLASS_PROTOCOL;
    default: snprintf(msg, msglen, "bad HTTP exchange with %s: %s", auth, why); return TP_ERRCLASS_PROTOCOL;
  }
}

bool tp_http_should_resend(bool reused, bool got_bytes, uint32_t resends, int curl_code) {
  if (!reused || got_bytes || resends >= TP_HTTP_MAX_RESENDS) return false;
  return curl_code == CURLE_SEND_ERROR || curl_code == CURLE_RECV_ERROR || curl_code == CURLE_GOT_NOTHING;
}
