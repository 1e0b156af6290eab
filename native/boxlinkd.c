/* boxlinkd: the box-services link. One daemon for every box on the host.
 *
 * For each linked box it holds a TCP listener on 127.0.0.1:PORT inside the box's network namespace
 * (created by setns into the box init's namespace and back; the daemon never joins the box's user or PID
 * namespace, so nothing in the box can signal or trace it) and relays every connection accepted there to
 * the box's unix socket on the host, where the server answers. The box reaches that socket and nothing else.
 *
 * Commands, one per line on stdin; one answer line each on stdout:
 *   add BOXID PID STARTTIME PORT SOCKET -> "ok BOXID" | "err BOXID REASON"   (replaces an earlier link)
 *   del BOXID                           -> "ok BOXID"   (closes the listener and every connection)
 * PID must be the box's init and STARTTIME its start time (/proc/PID/stat field 22): the namespace is
 * taken only when the pid still names that process after it was opened, so a recycled pid never links a
 * stranger. The daemon exits when stdin ends (the server is gone) or the server dies.
 *
 * Every socket is non-blocking under one level-triggered epoll loop. Each connection has one bounded buffer
 * per direction: a side is read only once its buffer went out, so a slow reader slows its own writer and
 * nothing else; half-closes pass through (shutdown). A box has at most MAXCONNS connections at once (and all
 * boxes together what the fd limit allows): past it a connection is accepted and closed at once. Once three
 * quarters of that total are in use, a box holding its share of the total (total / linked boxes) or more
 * gets no further connection, so greedy boxes leave the last quarter to the others. The kernel buffers of
 * every relayed socket are clamped (SOCK_BUF), since the daemon, not the box, is charged for them. Out of
 * fds system-wide (ENFILE), a listener stops being watched for PAUSE_MS rather than waking the loop at once.
 *
 * usage: boxlinkd [MAXCONNS]      (prints "ready" once it reads commands)
 */
#define _GNU_SOURCE
#include "common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#define BUF (16 * 1024)
#define LINE_MAX_LEN 4096
#define ACCEPTS_PER_WAKE 16
#define ID_MAX 128
/* Kernel send and receive buffer of each relayed socket (the kernel doubles it for its bookkeeping). */
#define SOCK_BUF (64 * 1024)
#define PAUSE_MS 100

enum kind { K_STDIN, K_LISTEN, K_END, K_TIMER };

struct conn;
/* One side of a connection: 0 is the box's TCP socket, 1 the unix socket to the server. */
struct end {
  enum kind kind;
  struct conn *c;
  int side, fd;
  int registered, gone, dead;
  uint32_t mask;
};
/* Bytes read from side i waiting to be written to the other side. */
struct dir {
  char buf[BUF];
  size_t off, len;
  int eof, shut, dropped;
};
struct box;
struct conn {
  struct box *box;
  struct end e[2];
  struct dir d[2];
  struct conn *prev, *next;
};
/* Closed connections and boxes are freed only after the batch of events at hand, which may still name them. */
struct grave {
  void *p;
  struct grave *next;
};
struct box {
  enum kind kind;
  int dead;
  char id[ID_MAX + 1];
  struct sockaddr_un target;
  int lfd, nconns, paused;
  struct conn *conns;
  struct box *next;
};

static int ep, self_ns, max_conns = 64, max_total = 256, total_conns, reserve_fd = -1, timer_fd = -1, nboxes;
static struct box *boxes;
static enum kind stdin_tag = K_STDIN, timer_tag = K_TIMER;
static struct grave *graves;

static void bury(void *p) {
  struct grave *g = malloc(sizeof *g);
  if (!g) die(1, "out of memory");
  *g = (struct grave){p, graves};
  graves = g;
}

static void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void reply(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

static uint32_t want(struct conn *c, int j) {
  uint32_t m = 0;
  struct dir *from = &c->d[j], *to = &c->d[1 - j];
  if (!from->eof && from->len == 0) m |= EPOLLIN;
  if (to->len > to->off && !to->dropped) m |= EPOLLOUT;
  return m;
}

/* Keeps an end's epoll interest equal to what it is waited on for. An end whose peer is gone reports
 * EPOLLHUP whatever its mask: it leaves the set while nothing is wanted of it, so it cannot spin. */
static int update(struct conn *c, int j) {
  struct end *e = &c->e[j];
  uint32_t m = want(c, j);
  struct epoll_event ev = {.events = m, .data.ptr = e};
  if (m == 0 && e->gone) {
    if (e->registered) epoll_ctl(ep, EPOLL_CTL_DEL, e->fd, NULL);
    e->registered = 0;
  } else if (!e->registered) {
    /* Out of epoll room (ENOMEM, max_user_watches): an end never watched would never be serviced. */
    if (epoll_ctl(ep, EPOLL_CTL_ADD, e->fd, &ev) != 0) return -1;
    e->registered = 1;
  } else if (m != e->mask) {
    epoll_ctl(ep, EPOLL_CTL_MOD, e->fd, &ev);
  }
  e->mask = m;
  return 0;
}

static void conn_close(struct conn *c) {
  for (int j = 0; j < 2; j++) {
    close(c->e[j].fd); /* closing drops it from the epoll set */
    c->e[j].dead = 1;
  }
  if (c->prev) c->prev->next = c->next;
  else c->box->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  c->box->nconns--;
  total_conns--;
  bury(c);
}

/* Moves what it can in direction i without blocking; returns -1 when the connection is broken. */
static int pump(struct conn *c, int i) {
  struct dir *d = &c->d[i];
  int src = c->e[i].fd, dst = c->e[1 - i].fd;
  if (d->len == 0 && !d->eof) {
    ssize_t n = read(src, d->buf, BUF);
    if (n > 0) d->off = 0, d->len = (size_t)n;
    else if (n == 0) d->eof = 1;
    else if (errno != EAGAIN && errno != EINTR) return -1;
  }
  if (d->dropped) d->off = d->len = 0; /* the other side is gone: nobody takes these bytes */
  if (d->len > d->off) {
    ssize_t n = send(dst, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
    if (n > 0) d->off += (size_t)n;
    else if (n < 0 && errno != EAGAIN && errno != EINTR) return -1;
    if (d->off == d->len) d->off = d->len = 0;
  }
  if (d->eof && d->len == 0 && !d->shut) {
    if (!d->dropped) shutdown(dst, SHUT_WR);
    d->shut = 1;
  }
  return 0;
}

static void on_end(struct end *e, uint32_t events) {
  struct conn *c = e->c;
  if (events & (EPOLLHUP | EPOLLERR)) {
    /* The peer of this end closed both ways (or reset): what is still readable from it goes on, what
     * is meant for it is dropped. */
    e->gone = 1;
    c->d[1 - e->side].dropped = 1;
  }
  if (pump(c, 0) < 0 || pump(c, 1) < 0) {
    conn_close(c);
    return;
  }
  /* Done once each direction ended, or goes to a side that is gone. */
  if ((c->d[0].shut || c->d[0].dropped) && (c->d[1].shut || c->d[1].dropped)) {
    conn_close(c);
    return;
  }
  if (update(c, 0) < 0 || update(c, 1) < 0) conn_close(c);
}

static int connect_target(struct box *b) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int size = SOCK_BUF;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  /* A unix connect completes at once or fails (EAGAIN: the server's backlog is full). */
  if (connect(fd, (struct sockaddr *)&b->target, sizeof b->target) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Stops watching a listener for PAUSE_MS (the timer watches it again). */
static void pause_listener(struct box *b) {
  struct epoll_event ev = {.events = 0, .data.ptr = b};
  if (b->paused || epoll_ctl(ep, EPOLL_CTL_MOD, b->lfd, &ev) != 0) return;
  b->paused = 1;
  struct itimerspec t = {.it_value = {.tv_nsec = PAUSE_MS * 1000000L}};
  timerfd_settime(timer_fd, 0, &t, NULL);
}

static void on_timer(void) {
  uint64_t n;
  if (read(timer_fd, &n, sizeof n) < 0) return;
  for (struct box *b = boxes; b; b = b->next) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = b};
    if (b->paused && epoll_ctl(ep, EPOLL_CTL_MOD, b->lfd, &ev) == 0) b->paused = 0;
  }
}

/* Whether box b may take one more connection. */
static int has_room(struct box *b) {
  if (b->nconns >= max_conns || total_conns >= max_total) return 0;
  return total_conns < max_total / 4 * 3 || b->nconns < max_total / (nboxes ? nboxes : 1);
}

static void on_listen(struct box *b) {
  for (int k = 0; k < ACCEPTS_PER_WAKE; k++) {
    int fd = accept4(b->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int e = errno;
      if (e == EMFILE && reserve_fd >= 0) {
        /* Out of fds: the spare one makes room to take the connection off the queue and close it, so
         * the listener does not stay readable (and the loop spin) until an fd frees up. */
        close(reserve_fd);
        fd = accept(b->lfd, NULL, NULL);
        if (fd >= 0) close(fd);
        reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) continue;
      }
      /* The host is out of files or memory (no spare helps there): wait rather than spin. */
      if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) pause_listener(b);
      if (reserve_fd < 0) reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
      return; /* EAGAIN, or an aborted connection */
    }
    /* A relay forwards what it read at once: without NODELAY a short write waits for the peer's delayed ACK
     * (~40 ms per request on a kept-alive connection). */
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int up = -1;
    if (!has_room(b) || (up = connect_target(b)) < 0) {
      close(fd);
      continue;
    }
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
      close(fd);
      close(up);
      continue;
    }
    c->box = b;
    for (int j = 0; j < 2; j++) c->e[j] = (struct end){.kind = K_END, .c = c, .side = j, .fd = j ? up : fd};
    c->next = b->conns;
    if (b->conns) b->conns->prev = c;
    b->conns = c;
    b->nconns++;
    total_conns++;
    if (update(c, 0) < 0 || update(c, 1) < 0) conn_close(c);
  }
}

static struct box *find(const char *id, struct box ***link) {
  struct box **p = &boxes;
  for (; *p; p = &(*p)->next)
    if (strcmp((*p)->id, id) == 0) break;
  if (link) *link = p;
  return *p;
}

static void unlink_box(const char *id) {
  struct box **p;
  struct box *b = find(id, &p);
  if (!b) return;
  while (b->conns) conn_close(b->conns);
  close(b->lfd);
  b->dead = 1;
  nboxes--;
  *p = b->next;
  bury(b);
}

/* Start time of a process (clock ticks since boot), or -1. */
static long long start_time(long pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
  if (!p) return -1;
  p += 2;
  for (int field = 3; field < 22 && p; field++) p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL;
  return p ? atoll(p) : -1;
}

/* A listener on 127.0.0.1:port in the network namespace of `pid`, or -1 with a reason. */
static int listen_in(long pid, long long started, int port, const char **why) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/ns/net", pid);
  int ns = open(path, O_RDONLY | O_CLOEXEC);
  if (ns < 0) return *why = "no such box init", -1;
  /* Checked after the open: the process that had the pid then is the box's init, which still runs. */
  if (start_time(pid) != started) {
    close(ns);
    return *why = "the pid is not the box's init", -1;
  }
  if (setns(ns, CLONE_NEWNET) != 0) {
    close(ns);
    return *why = "setns into the box failed", -1;
  }
  close(ns);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  /* Accepted sockets inherit the listener's buffer sizes (and a window scale to match). */
  int size = SOCK_BUF;
  if (fd >= 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
  }
  *why = NULL;
  if (fd < 0) *why = "socket failed";
  /* SO_REUSEADDR lets a re-link bind past connections of the previous link in TIME_WAIT. */
  else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
           bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0)
    *why = errno == EADDRINUSE ? "the port is taken in the box" : "bind failed";
  else if (listen(fd, 128) != 0) *why = "listen failed";
  /* Back home before anything else: every other socket belongs to the host's namespace. */
  if (setns(self_ns, CLONE_NEWNET) != 0) die(1, "setns back to the host network namespace");
  if (*why) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

static void link_box(char *args) {
  char id[ID_MAX + 1], sock[256];
  long pid;
  long long started;
  int port;
  if (sscanf(args, "%128s %ld %lld %d %255s", id, &pid, &started, &port, sock) != 5) {
    reply("err %s bad add arguments\n", strtok(args, " ") ? args : "-");
    return;
  }
  struct sockaddr_un target = {.sun_family = AF_UNIX};
  if (pid <= 0 || port <= 0 || port > 65535 || strlen(sock) >= sizeof target.sun_path) {
    reply("err %s bad add arguments\n", id);
    return;
  }
  strcpy(target.sun_path, sock);
  unlink_box(id);
  const char *why;
  int lfd = listen_in(pid, started, port, &why);
  if (lfd < 0) {
    reply("err %s %s\n", id, why);
    return;
  }
  struct box *b = calloc(1, sizeof *b);
  if (!b) die(1, "out of memory");
  b->kind = K_LISTEN;
  strcpy(b->id, id);
  b->target = target;
  b->lfd = lfd;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = b};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) != 0) {
    close(lfd);
    free(b);
    reply("err %s epoll failed\n", id);
    return;
  }
  b->next = boxes;
  boxes = b;
  nboxes++;
  reply("ok %s\n", id);
}

static void command(char *line) {
  if (strncmp(line, "add ", 4) == 0) {
    link_box(line + 4);
  } else if (strncmp(line, "del ", 4) == 0) {
    unlink_box(line + 4);
    reply("ok %s\n", line + 4);
  } else {
    reply("err - unknown command\n");
  }
}

static void on_stdin(void) {
  static char line[LINE_MAX_LEN];
  static size_t len;
  static int skipping;
  ssize_t n = read(0, line + len, sizeof line - len);
  if (n == 0) exit(0); /* the server is gone: so are the sockets every link relays to */
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return;
    die(1, "read stdin");
  }
  len += (size_t)n;
  char *start = line, *nl;
  while ((nl = memchr(start, '\n', (size_t)(line + len - start)))) {
    *nl = '\0';
    if (!skipping) command(start);
    skipping = 0;
    start = nl + 1;
  }
  len = (size_t)(line + len - start);
  memmove(line, start, len);
  if (len == sizeof line) { /* a line longer than any command: dropped up to its newline */
    skipping = 1;
    len = 0;
    reply("err - line too long\n");
  }
}

int main(int argc, char **argv) {
  progname = "boxlinkd";
  if (argc > 1) max_conns = atoi(argv[1]);
  if (max_conns < 1) max_conns = 64;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 0; /* the server died before the line above took effect */
  signal(SIGPIPE, SIG_IGN);
  /* Two fds a connection: as many as the hard limit allows, less room for listeners and the rest. */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    max_total = rl.rlim_cur > 4096 ? (int)((rl.rlim_cur - 2048) / 2) : (int)(rl.rlim_cur / 4);
  }
  self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  ep = epoll_create1(EPOLL_CLOEXEC);
  reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (self_ns < 0 || ep < 0 || reserve_fd < 0 || timer_fd < 0) die(1, "setup");
  struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &timer_tag};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, timer_fd, &tev) != 0) die(1, "epoll timer");
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &stdin_tag};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev) != 0) die(1, "epoll stdin");
  reply("ready\n");
  struct epoll_event evs[256];
  for (;;) {
    int n = epoll_wait(ep, evs, 256, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      die(1, "epoll_wait");
    }
    for (int i = 0; i < n; i++) {
      enum kind *k = evs[i].data.ptr;
      if (*k == K_STDIN) on_stdin();
      else if (*k == K_TIMER) on_timer();
      else if (*k == K_LISTEN) {
        if (!((struct box *)k)->dead) on_listen((struct box *)k);
      } else if (!((struct end *)k)->dead) {
        on_end((struct end *)k, evs[i].events);
      }
    }
    while (graves) {
      struct grave *g = graves;
      graves = g->next;
      free(g->p);
      free(g);
    }
  }
}
