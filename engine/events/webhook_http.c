/*
 * webhook_http.c -- the delivery thread: libcurl's multi interface behind
 * two bounded queues and an eventfd (contract in webhook_http.h).
 *
 * Why built this way:
 *   - The easy handle is configured in wh_http_submit, on the caller's
 *     thread (libcurl copies every string option; the body goes through
 *     CURLOPT_COPYPOSTFIELDS), so the caller's buffers are free as soon
 *     as submit returns and the delivery thread only adds handles.
 *   - The delivery thread sleeps in curl_multi_poll; submit and stop wake
 *     it with curl_multi_wakeup (thread-safe), so a new request starts at
 *     once without a polling interval.
 *   - Ownership: a job belongs to the pending ring until the thread takes
 *     it, then to the thread's active list until it completes; its result
 *     is a plain struct copied into the done ring.  The count of
 *     outstanding requests (pending + active + done) is what submit
 *     bounds, so the done ring (queue_cap slots) never overflows.
 *   - CURLOPT_OPENSOCKETFUNCTION checks the address curl is about to
 *     connect to with wh_addr_refusal: even a request submitted without a
 *     pin, or a name whose answer changed, cannot reach a private address
 *     unless the operator allows it.
 */
#include "engine/events/webhook_http.h"

#include "engine/events/webhook_url.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct job {
	uint64_t tag;
	CURL *easy;
	struct curl_slist *headers;
	struct curl_slist *resolve;
	size_t got;             /* response bytes read */
	size_t cap;             /* response_cap */
	int truncated;
	int allow_private;
	int refused;            /* the opensocket check refused an address */
	char errbuf[CURL_ERROR_SIZE];
	struct job *next, *prev; /* the thread's active list */
};

struct wh_http {
	struct wh_http_config cfg;  /* cfg.ca_file points at ca_file below */
	char *ca_file;              /* owned copy, or NULL */
	CURLM *multi;
	int efd;
	pthread_t thread;
	atomic_int stop;

	pthread_mutex_t mu;      /* guards the rings and outstanding */
	struct job **pending;    /* ring of cfg.queue_cap */
	size_t p_head, p_len;
	struct wh_http_result *done; /* ring of cfg.queue_cap */
	size_t d_head, d_len;
	unsigned outstanding;

	struct job *active;      /* delivery thread only */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_ok;

/* curl_global_init once per process, before any handle. */
static void curl_init_once(void)
{
	curl_ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

/* Free a job and everything it owns. */
static void job_free(struct job *j)
{
	if (!j)
		return;
	if (j->easy)
		curl_easy_cleanup(j->easy);
	curl_slist_free_all(j->headers);
	curl_slist_free_all(j->resolve);
	free(j);
}

/* Count the response body; past cap, stop the transfer (a short count
 * makes libcurl end it with CURLE_WRITE_ERROR). */
static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
	(void)p;
	struct job *j = ud;
	size_t n = size * nmemb;
	if (n > j->cap - j->got) {
		j->got = j->cap;
		j->truncated = 1;
		return 0;
	}
	j->got += n;
	return n;
}

/* Open the socket curl asks for, unless the address is refused. */
static curl_socket_t on_opensocket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct job *j = ud;
	(void)purpose;
	if (!j->allow_private && wh_addr_refusal(&a->addr) != NULL) {
		j->refused = 1;
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* 1 when r is inside every bound of webhook_http.h. */
static int request_valid(const struct wh_http_request *r)
{
	if (!r->url || r->n_headers > WH_HTTP_HEADERS_MAX || (r->n_headers && !r->headers) ||
	    r->body_len > WH_HTTP_BODY_MAX || (r->body_len && !r->body))
		return 0;
	if (r->connect_timeout_ms < 1 || r->connect_timeout_ms > WH_HTTP_TIMEOUT_MAX_MS || r->timeout_ms < 1 ||
	    r->timeout_ms > WH_HTTP_TIMEOUT_MAX_MS)
		return 0;
	for (size_t i = 0; i < r->n_headers; i++)
		if (!r->headers[i] || strpbrk(r->headers[i], "\r\n"))
			return 0;
	return 1;
}

/* A configured easy handle for r, or NULL (errno set). */
static struct job *job_new(const struct wh_http *h, const struct wh_http_request *r)
{
	struct job *j = calloc(1, sizeof(*j));
	if (!j || !(j->easy = curl_easy_init()))
		goto nomem;
	j->tag = r->tag;
	j->cap = h->cfg.response_cap;
	j->allow_private = h->cfg.allow_private;
	/* no 100-continue round trip; the body is sent at once */
	if (!(j->headers = curl_slist_append(NULL, "Expect:")))
		goto nomem;
	for (size_t i = 0; i < r->n_headers; i++) {
		struct curl_slist *s = curl_slist_append(j->headers, r->headers[i]);
		if (!s)
			goto nomem;
		j->headers = s;
	}
	if (r->resolve && r->resolve[0] && !(j->resolve = curl_slist_append(NULL, r->resolve)))
		goto nomem;
	const char *protos = h->cfg.allow_http ? "http,https" : "https";
	CURL *e = j->easy;
	int bad = 0;
	bad |= curl_easy_setopt(e, CURLOPT_URL, r->url) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, protos) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, protos) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_MAXREDIRS, 0L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_PROXY, "") != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, r->connect_timeout_ms) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, r->timeout_ms) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, j->headers) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_USERAGENT, "wm-webhooks/1") != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, r->body_len ? (const char *)r->body : "") != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_WRITEDATA, j) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, on_opensocket) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, j) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->errbuf) != CURLE_OK;
	bad |= curl_easy_setopt(e, CURLOPT_PRIVATE, j) != CURLE_OK;
	if (j->resolve)
		bad |= curl_easy_setopt(e, CURLOPT_RESOLVE, j->resolve) != CURLE_OK;
	if (h->ca_file)
		bad |= curl_easy_setopt(e, CURLOPT_CAINFO, h->ca_file) != CURLE_OK;
	if (bad) {
		job_free(j);
		errno = EINVAL;
		return NULL;
	}
	return j;
nomem:
	job_free(j);
	errno = ENOMEM;
	return NULL;
}

/* Signal the eventfd once. */
static void efd_signal(int efd)
{
	uint64_t one = 1;
	ssize_t w = write(efd, &one, sizeof(one));
	(void)w; /* EAGAIN only when the counter is saturated: still readable */
}

/* The result of a finished transfer into the done ring, then free it. */
static void job_finish(struct wh_http *h, struct job *j, CURLcode rc)
{
	struct wh_http_result res = {.tag = j->tag};
	long status = 0;
	curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &status);
	/* A body stopped at the cap is our choice, not a transport failure:
	 * the status line arrived and decides. */
	res.transport_ok = rc == CURLE_OK || (rc == CURLE_WRITE_ERROR && j->truncated && status > 0);
	res.status = res.transport_ok ? status : 0;
	res.cls = wh_classify(res.transport_ok, res.status);
	curl_off_t ra = 0;
	if (res.transport_ok && curl_easy_getinfo(j->easy, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
		res.retry_after_s = ra > 86400 * 7 ? 86400 * 7 : (long)ra; /* a week at most */
	res.bytes_read = j->got;
	res.truncated = j->truncated;
	if (!res.transport_ok) {
		/* a long text is cut (it is for a log line): copy with an explicit bound */
		const char *pre = j->refused ? "destination refused: " : "";
		const char *why = j->errbuf[0] ? j->errbuf : curl_easy_strerror(rc);
		size_t pl = strlen(pre), wl = strnlen(why, sizeof(res.error));
		if (wl > sizeof(res.error) - 1 - pl)
			wl = sizeof(res.error) - 1 - pl;
		memcpy(res.error, pre, pl);
		memcpy(res.error + pl, why, wl);
		res.error[pl + wl] = '\0';
	}
	curl_multi_remove_handle(h->multi, j->easy);
	job_free(j);
	pthread_mutex_lock(&h->mu);
	h->done[(h->d_head + h->d_len) % h->cfg.queue_cap] = res;
	h->d_len++;
	pthread_mutex_unlock(&h->mu);
	efd_signal(h->efd);
}

/* Unlink j from the active list. */
static void active_unlink(struct wh_http *h, struct job *j)
{
	if (j->prev)
		j->prev->next = j->next;
	else
		h->active = j->next;
	if (j->next)
		j->next->prev = j->prev;
}

/* The delivery thread: add pending jobs, drive transfers, report the
 * finished ones, sleep until a socket or a wake-up. */
static void *run(void *arg)
{
	struct wh_http *h = arg;
	while (!atomic_load(&h->stop)) {
		pthread_mutex_lock(&h->mu);
		while (h->p_len) {
			struct job *j = h->pending[h->p_head];
			h->p_head = (h->p_head + 1) % h->cfg.queue_cap;
			h->p_len--;
			j->next = h->active;
			j->prev = NULL;
			if (h->active)
				h->active->prev = j;
			h->active = j;
			if (curl_multi_add_handle(h->multi, j->easy) != CURLM_OK) {
				pthread_mutex_unlock(&h->mu);
				active_unlink(h, j);
				job_finish(h, j, CURLE_FAILED_INIT);
				pthread_mutex_lock(&h->mu);
			}
		}
		pthread_mutex_unlock(&h->mu);
		int running = 0;
		curl_multi_perform(h->multi, &running);
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(h->multi, &left))) {
			if (m->msg != CURLMSG_DONE)
				continue;
			char *priv = NULL;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
			struct job *j = (struct job *)(void *)priv;
			CURLcode rc = m->data.result;
			active_unlink(h, j);
			job_finish(h, j, rc);
		}
		curl_multi_poll(h->multi, NULL, 0, 1000, NULL);
	}
	while (h->active) {
		struct job *j = h->active;
		active_unlink(h, j);
		curl_multi_remove_handle(h->multi, j->easy);
		job_free(j);
	}
	return NULL;
}

struct wh_http *wh_http_start(const struct wh_http_config *c)
{
	if (c->queue_cap < 1 || c->queue_cap > WH_HTTP_QUEUE_MAX || c->max_host_conns < 1 ||
	    c->max_host_conns > WH_HTTP_HOST_CONNS_MAX || c->response_cap > WH_HTTP_RESPONSE_MAX)
		return NULL;
	pthread_once(&curl_once, curl_init_once);
	if (!curl_ok)
		return NULL;
	struct wh_http *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->cfg = *c;
	h->efd = -1;
	h->ca_file = c->ca_file ? strdup(c->ca_file) : NULL;
	h->cfg.ca_file = h->ca_file;
	pthread_mutex_init(&h->mu, NULL);
	h->pending = calloc(c->queue_cap, sizeof(*h->pending));
	h->done = calloc(c->queue_cap, sizeof(*h->done));
	h->multi = curl_multi_init();
	h->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!h->pending || !h->done || !h->multi || h->efd < 0 || (c->ca_file && !h->ca_file) ||
	    curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)c->max_host_conns) != CURLM_OK ||
	    pthread_create(&h->thread, NULL, run, h) != 0) {
		if (h->multi)
			curl_multi_cleanup(h->multi);
		if (h->efd >= 0)
			close(h->efd);
		free(h->pending);
		free(h->done);
		free(h->ca_file);
		pthread_mutex_destroy(&h->mu);
		free(h);
		return NULL;
	}
	return h;
}

int wh_http_submit(struct wh_http *h, const struct wh_http_request *r)
{
	if (!request_valid(r)) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&h->mu);
	int full = h->outstanding >= h->cfg.queue_cap;
	if (!full)
		h->outstanding++; /* reserve the slot before the slow part */
	pthread_mutex_unlock(&h->mu);
	if (full) {
		errno = EAGAIN;
		return -1;
	}
	struct job *j = job_new(h, r);
	pthread_mutex_lock(&h->mu);
	if (!j) {
		h->outstanding--;
	} else {
		h->pending[(h->p_head + h->p_len) % h->cfg.queue_cap] = j;
		h->p_len++;
	}
	pthread_mutex_unlock(&h->mu);
	if (!j)
		return -1;
	curl_multi_wakeup(h->multi);
	return 0;
}

int wh_http_eventfd(const struct wh_http *h)
{
	return h->efd;
}

size_t wh_http_take(struct wh_http *h, struct wh_http_result *out, size_t max)
{
	uint64_t v;
	ssize_t rd = read(h->efd, &v, sizeof(v)); /* drain first: a later completion signals again */
	(void)rd;
	size_t n = 0;
	pthread_mutex_lock(&h->mu);
	while (n < max && h->d_len) {
		out[n++] = h->done[h->d_head];
		h->d_head = (h->d_head + 1) % h->cfg.queue_cap;
		h->d_len--;
		h->outstanding--;
	}
	int more = h->d_len > 0;
	pthread_mutex_unlock(&h->mu);
	if (more)
		efd_signal(h->efd);
	return n;
}

unsigned wh_http_outstanding(struct wh_http *h)
{
	pthread_mutex_lock(&h->mu);
	unsigned n = h->outstanding;
	pthread_mutex_unlock(&h->mu);
	return n;
}

void wh_http_stop(struct wh_http *h)
{
	if (!h)
		return;
	atomic_store(&h->stop, 1);
	curl_multi_wakeup(h->multi);
	pthread_join(h->thread, NULL);
	while (h->p_len) {
		job_free(h->pending[h->p_head]);
		h->p_head = (h->p_head + 1) % h->cfg.queue_cap;
		h->p_len--;
	}
	curl_multi_cleanup(h->multi);
	close(h->efd);
	free(h->pending);
	free(h->done);
	free(h->ca_file);
	pthread_mutex_destroy(&h->mu);
	free(h);
}
