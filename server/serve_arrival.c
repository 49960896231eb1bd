/* serve_arrival.c - the request timeout of `zipage serve`: a request must have arrived, headers and
 * body, within cfg.request_timeout seconds of its connection's start (or of the previous answer on a
 * kept-alive connection). libmicrohttpd calls the server only once the headers are complete, and
 * takes no answer while a body comes in, so the deadline is kept here: every connection is listed
 * from its start (libmicrohttpd's connection notifications) to its close, and srv_arrival_sweep,
 * called by srv_run's main thread between signal waits, shuts down the socket of one still arriving
 * past its deadline (libmicrohttpd then sees the client gone and closes it). A connection is
 * removed from the list before libmicrohttpd closes its socket, under the list's mutex, so a swept
 * descriptor is never another connection's. Deliberately not here: the idle timeout (a silence;
 * libmicrohttpd's connection timeout) and the limits checked on the headers (serve.c). */
#include "serve_http.h"

#include <stdlib.h>
#include <sys/socket.h>
#include "clock.h"

typedef struct srv_arrival {
    struct srv_arrival *prev, *next;
    int fd;
    double t0;    /* the connection's start, or its previous answer's end */
    int arriving; /* 1 until the request's body is complete (then the engine's time, not the client's) */
} srv_arrival;

void srv_arrival_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                        enum MHD_ConnectionNotificationCode code) {
    srv_server *s = cls;
    pthread_mutex_lock(&s->arrival_mu);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        srv_arrival *a = ci ? calloc(1, sizeof *a) : NULL;
        if (a) { /* out of memory: this connection is held to the idle timeout only */
            a->fd = ci->connect_fd;
            a->t0 = zp_now();
            a->arriving = 1;
            a->next = s->arrivals;
            if (s->arrivals) s->arrivals->prev = a;
            s->arrivals = a;
        }
        *socket_context = a;
    } else if (*socket_context) {
        srv_arrival *a = *socket_context;
        if (a->prev)
            a->prev->next = a->next;
        else
            s->arrivals = a->next;
        if (a->next) a->next->prev = a->prev;
        free(a);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&s->arrival_mu);
}

void srv_arrival_mark(srv_server *s, struct MHD_Connection *c, int arriving) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    srv_arrival *a = ci ? ci->socket_context : NULL;
    if (!a) return;
    pthread_mutex_lock(&s->arrival_mu);
    a->arriving = arriving;
    if (arriving) a->t0 = zp_now();
    pthread_mutex_unlock(&s->arrival_mu);
}

int srv_arrival_sweep(srv_server *s, double now) {
    if (s->cfg.request_timeout <= 0) return 0;
    int n = 0;
    pthread_mutex_lock(&s->arrival_mu);
    for (srv_arrival *a = s->arrivals; a; a = a->next)
        if (a->arriving && now - a->t0 > s->cfg.request_timeout && a->fd >= 0) {
            shutdown(a->fd, SHUT_RDWR);
            a->fd = -1; /* once */
            n++;
        }
    pthread_mutex_unlock(&s->arrival_mu);
    return n;
}
