/* What the parts of the libcurl HTTP client share (tp_http.c: setup and
 * starting requests; tp_http_loop.c: libcurl's multi-socket interface on
 * the libuv loop and ending requests; tp_http_classify.c: what a failed
 * transfer means).  Private to transport/. */
#ifndef TP_HTTP_INTERNAL_H
#define TP_HTTP_INTERNAL_H

#include "tp_http.h"

#include <curl/curl.h>

#include "transport/tp_http_raw.h"
#include "util/tp_u64map.h"

typedef struct rx_conn rx_conn;

/* One uv_poll per socket libcurl asks us to watch. */
typedef struct sock_ctx {
  tp_http *h;
  uv_poll_t poll;
  curl_socket_t fd;
  int local_port; /* the connection's local port, 0 until known */
  int events;     /* what libcurl asked to watch (UV_READABLE | UV_WRITABLE) */
  rx_conn *rx;    /* its arrival tracker (tx_sock.rx), looked up once */
  bool rx_looked;
  struct sock_ctx *prev, *next;
} sock_ctx;

/* Arrival times by body position on a plaintext HTTP/1.1 connection
 * (tp_http_loop.c, "arrival stamps"): before libcurl reads a readable
 * socket, the bytes waiting that were not seen yet are peeked and fed to
 * the tracker, and the end of each run of body bytes among them is noted
 * with the kernel stamp of the segment that holds it.  A body piece
 * libcurl delivers later is dated by the first mark at or past its last
 * byte. */
typedef struct rx_mark {
  uint64_t resp;     /* the tracker's response index */
  uint64_t body_end; /* body bytes of that response up to the mark */
  uint64_t ns;       /* the arrival of the segment holding byte body_end-1 */
} rx_mark;

/* Body runs fed and not yet delivered: libcurl delivers what it read
 * before its call returns, so the ring holds at most the runs of one look
 * at the queue (a late loop: one per event waiting); past that the newest
 * mark stretches (later, never earlier).  About 800 bytes a connection. */
#define RX_MARKS 32

struct rx_conn {
  tp_http_raw *raw;
  /* The tracker follows the stream: fed is the position (in the kernel's
   * count of bytes received on the connection) up to which it was fed. */
  bool synced;
  uint64_t fed;
  rx_mark marks[RX_MARKS]; /* a ring, oldest at head */
  unsigned head, n;
  /* Where the tracker stood at fed: response fed_resp, fed_body body bytes
   * into it, between two chunks of a chunked body or not. */
  uint64_t fed_resp, fed_body;
  bool fed_between;
  /* The kernel's count of data segments when fed was the count of bytes
   * received (segs_ok): one more segment since brought every new byte. */
  uint32_t segs;
  bool segs_ok;
  /* Body libcurl delivered past fed_body (it read bytes the tracker never
   * saw: they came between the look and libcurl's read): the pieces'
   * bytes, and their raw length as whole chunks without extensions.  The
   * next look that finds the stream that much further resumes there. */
  uint64_t gap_body, gap_raw;
};

/* A socket libcurl opened (tp__http_sockopt_cb) and has not closed: the
 * send stamps are read from it by its number, found by local port. */
typedef struct tx_sock {
  curl_socket_t fd;
  int local_port; /* 0 until connected and looked up */
  bool stamps;    /* transmit stamps are on */
  rx_conn *rx;    /* NULL over TLS (the raw bytes are records) or without memory */
} tx_sock;

struct tp_http_req {
  tp_http *h;
  CURL *easy;
  tp_http_req_cbs cbs;
  void *user_data;
  tp_http_req *prev, *next; /* h->reqs: every request not yet finished */
  size_t body_len;
  uint64_t sent_ns;
  bool added;     /* in the multi handle */
  bool responded; /* on_response was called */
  bool finished;
  bool got_bytes; /* a byte of the answer came (header or body) */
  uint32_t resends;  /* ours and libcurl's own */
  uint32_t attempts; /* times libcurl began to send it since it was (re-)added */
  bool abort; /* stop it at the next chance (tp_http_fail) */
  bool local_failed;
  tp_error_class local_class;
  char local_msg[256];
  char errbuf[CURL_ERROR_SIZE];
  uint64_t session; /* 0, or the session whose share (connection) it uses */
  int local_port;   /* its connection's local port (prereq_cb), 0 until known */
  uint64_t last_arrival_ns; /* the time given to its last bytes */
  /* Its connection's arrival tracker (NULL: none, or it lost the stream
   * when this attempt began), the tracker's index for its response, and
   * the body bytes libcurl has handed over in this attempt. */
  rx_conn *rx;
  uint64_t rx_resp;
  uint64_t body_seen;
  /* The send time (tp_http_loop.c, "send stamps"): from prereq_cb until
   * final, the request is on h->tx_list and every transmit stamp read from
   * tx_fd is its latest write's; the newest is the send time once libcurl
   * has taken the whole body and the kernel has sent every byte of it. */
  curl_socket_t tx_fd;    /* CURL_SOCKET_BAD: no stamped socket known */
  uint64_t tx_ns;         /* newest transmit stamp since this attempt began */
  uint64_t clock_sent_ns; /* the clock when libcurl said the body was taken */
  bool uploaded;          /* libcurl has taken the whole body */
  bool tx_listed;         /* on h->tx_list */
  bool sent_kernel;       /* sent_ns is a kernel stamp */
  tp_http_req *tx_prev, *tx_next;
  /* Its own header lines (x-request-id, traceparent), put in front of the
   * shared list of its kind: nodes of libcurl's list kept here, so a
   * request costs no allocation for them. */
  struct curl_slist xh[2];
  char xh_line[2][TP_HTTP_XH_MAX];
  char resp_request_id[64]; /* the reply's x-request-id, "" = none */
};

struct tp_http {
  uv_loop_t *loop;
  CURLM *multi;
  uv_timer_t timer;   /* libcurl's timeout */
  uv_timer_t defer;   /* work asked for outside libcurl's calls */
  int in_curl;        /* inside curl_multi_socket_action */
  uint64_t action_ns; /* when the current socket event was seen */
  /* The socket that event was for (CURL_SOCKET_BAD for a timer's call) and
   * its local port: one libcurl call may also run other transfers, whose
   * bytes come from other sockets, and action_ns dates only this one's.  A
   * transfer is matched to the socket by its connection's local port, which
   * libcurl reports when it sends (CURLINFO_ACTIVESOCKET is not set while a
   * transfer runs). */
  curl_socket_t action_fd;
  int action_port;
  /* Arrival times by position in action_fd's byte stream: every byte
   * before seg[k].received (the kernel's count when the stamp was taken)
   * arrived by seg[k].ns.  seg[0] is action_ns; libcurl reads a socket
   * again while it stays readable, so each answer callback adds the stamp
   * of what came meanwhile (tp__http_after_body), and a byte past the last
   * count is dated by the clock.  n_seg 0: counts unknown. */
  struct {
    uint64_t received, ns;
  } seg[8];
  int n_seg;
  tp_http_req *reqs;
  size_t n_reqs;
  size_t n_pending_add; /* started inside a libcurl call, not yet added */
  size_t n_aborts;      /* marked abort, not yet finished */
  sock_ctx *socks;
  struct curl_slist *hdr_get, *hdr_json, *hdr_sse;
  bool user_request_id, user_traceparent; /* -H names the header: the user's goes instead */
  char *base_url;
  char authority[288];
  bool tls;
  char *ca_file, *cert_file, *key_file;
  bool insecure, http1_only;
  uint64_t connect_timeout_ns;
  uint32_t conns_opened;
  int open_handles;
  bool closing;
  char user_agent[48];
  tp_u64map shares; /* per session in flight: its connection (tp_http_share.h) */
  tx_sock *txs;      /* libcurl's open sockets */
  size_t n_txs, cap_txs;
  tp_http_req *tx_list; /* requests whose send time is not final yet */
  rx_conn *action_rx;   /* the arrival tracker of action_fd's connection */
  uint8_t *rx_buf;      /* where waiting bytes are peeked (RX_PEEK_BYTES) */
  /* Arrival dating over the client's life: body pieces dated by a mark and
   * by the fallback, trackers lost, gaps of whole chunks stepped over. */
  uint64_t rx_pieces_marked, rx_pieces_fallback, rx_lost, rx_resumed;
  uint64_t sends_kernel, sends_clock; /* send times by source, over the client's life */
};

/* The loop (tp_http_loop.c). */
/* Frees h once it is closing and its last libuv handle closed. */
void tp__http_maybe_free(tp_http *h);
/* Points libcurl's socket and timer callbacks of h's multi handle at the loop. */
void tp__http_watch_multi(tp_http *h);
/* CURLOPT_SOCKOPTFUNCTION and CURLOPT_CLOSESOCKETFUNCTION (data: h). */
int tp__http_sockopt_cb(void *ud, curl_socket_t fd, curlsocktype purpose);
int tp__http_closesocket_cb(void *ud, curl_socket_t fd);

/* Failures (tp_http_classify.c): the class of a failed transfer, and its
 * message for the user in msg. */
tp_error_class tp__http_classify(const tp_http *h, const tp_http_req *r, CURLcode code, char *msg,
                                 size_t msglen);

/* When the bytes libcurl hands r's callbacks now arrived: the current
 * socket event's stamp when they came from that socket, else the clock
 * (never earlier than their arrival; libcurl has read them already, so
 * their kernel stamp is gone). */
uint64_t tp__http_arrival_ns(const tp_http_req *r);
/* The arrival time of the body bytes [r->body_seen, r->body_seen + n) that
 * libcurl hands r now, from the marks of its connection's tracker; 0 when
 * none covers them (the caller uses tp__http_arrival_ns). */
uint64_t tp__http_rx_body_ns(tp_http_req *r, size_t n);
/* r is about to be sent on the connection with that local port
 * (prereq_cb): its answer is the next one the tracker reads. */
void tp__http_rx_begin(tp_http_req *r, int local_port);
/* After an answer callback that began at began_ns: notes the arrival time
 * of bytes that came to the socket meanwhile, before libcurl reads them
 * (see seg). */
void tp__http_after_body(const tp_http_req *r, uint64_t began_ns);

/* Send stamps (tp_http_loop.c).  tp__http_tx_begin: r is about to be sent
 * on the connection with that local port (prereq_cb): its send time starts
 * over.  tp__http_tx_uploaded: libcurl has taken r's whole body (clock
 * reading now_ns, the fallback).  tp__http_tx_final: the answer began or r
 * ended, so every byte of it was sent: the send time is settled from the
 * stamps read so far. */
void tp__http_tx_begin(tp_http_req *r, int local_port);
void tp__http_tx_uploaded(tp_http_req *r, uint64_t now_ns);
void tp__http_tx_final(tp_http_req *r);

#endif
