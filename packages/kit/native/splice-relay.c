/*
 * splice-relay: relays bytes between two connected sockets without copying them through
 * user space (splice(2) through a pipe per direction), for a gate's long transfers.
 *
 * The gate (packages/kit/src/splice-relay.ts) starts one per connection it hands off, with
 * the client socket as fd 3 and the backend socket as fd 4, after it has flushed everything
 * it had read. Both sockets stay open in the gate too; this process only moves bytes, and the
 * gate closes the sockets when it exits.
 *
 *   splice-relay IDLE_MS GRACE_MS NICE
 *
 * IDLE_MS: exit when no byte moved for that long (0: never). GRACE_MS: once one side has
 * finished (end of stream or an error), how long the other may still send before exiting.
 * NICE: added to the helper's niceness before it relays (0: none). A relay that only moves
 * bytes does best at a lower priority than the programs at both ends: woken at the gate's
 * priority it preempts them on every arrival and moves a packet at a time; a step behind
 * them it runs when a core has a gap and takes what has queued up meanwhile (measured in
 * docs/performance/sshproxy.md: less CPU per GiB for the whole machine, faster transfers).
 * An end of stream is passed on as a write shutdown of the other socket, after the bytes
 * before it. On stdout it writes "UP DOWN\n" lines (bytes client->backend and
 * backend->client since the previous line) at most every REPORT_MS while bytes move, and
 * a last one before it exits.
 *
 * Exit status: 0 both sides finished, 1 the relay failed (a reset, a broken pipe),
 * 2 idle, 3 a usage error, 4 the gate went away.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REPORT_MS 1000
#define PIPE_BYTES (1 << 20)

struct direction {
  int from, to;
  int pipe_r, pipe_w;
  size_t capacity;    /* the pipe's size in bytes */
  size_t in_pipe;     /* bytes spliced in and not yet out */
  int pipe_full;      /* the last splice in found no room (pages, not bytes, fill a pipe) */
  int readable;       /* worth a splice in: poll said so, or the last one filled the pipe */
  int writable;       /* worth a splice out: poll said so, or the last one took everything */
  int from_done;      /* end of stream, or the read side failed */
  int shut;           /* the end was passed on */
  unsigned long long moved;
};

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void report(struct direction *up, struct direction *down, int force) {
  static unsigned long long sent_up, sent_down;
  static long long last;
  long long t = now_ms();
  if (!force && t - last < REPORT_MS) return;
  if (up->moved == sent_up && down->moved == sent_down) return;
  char line[64];
  int n = snprintf(line, sizeof line, "%llu %llu\n", up->moved - sent_up, down->moved - sent_down);
  /* A gate that stops reading only loses counts, never bytes of the relay. */
  if (write(STDOUT_FILENO, line, (size_t)n) == n) {
    sent_up = up->moved;
    sent_down = down->moved;
  }
  last = t;
}

static int open_pipe(struct direction *d) {
  int p[2];
  if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return -1;
  /* A bigger pipe means fewer splices per byte; the kernel may refuse (pipe-max-size). */
  (void)fcntl(p[1], F_SETPIPE_SZ, PIPE_BYTES);
  int size = fcntl(p[1], F_GETPIPE_SZ);
  d->capacity = size > 0 ? (size_t)size : 65536;
  d->pipe_r = p[0];
  d->pipe_w = p[1];
  return 0;
}

/*
 * Moves what it can without blocking, trying only what poll (or the last splice) said may
 * succeed: a wake-up then costs one splice in and one out, not a round of EAGAINs.
 * Returns 1 if a byte moved, 0 if not, -1 on failure.
 */
static int step(struct direction *d) {
  int progress = 0;
  if (d->in_pipe >= d->capacity) d->pipe_full = 1;
  if (!d->from_done && !d->pipe_full && d->readable) {
    /* A zero length would read as the end of the stream. */
    size_t room = d->capacity - d->in_pipe;
    ssize_t n = splice(d->from, NULL, d->pipe_w, NULL, room, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      d->in_pipe += (size_t)n;
      /* Less than asked: the socket is most likely drained (poll will tell if not). */
      if ((size_t)n < room) d->readable = 0;
      progress = 1;
    } else if (n == 0) {
      d->from_done = 1;
    } else if (errno == EAGAIN) {
      if (d->in_pipe > 0) d->pipe_full = 1;
      else d->readable = 0;
    } else if (errno != EINTR) {
      d->from_done = 1;
      return -1;
    }
  }
  while (d->in_pipe > 0 && d->writable) {
    ssize_t n = splice(d->pipe_r, NULL, d->to, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (n > 0) {
      d->in_pipe -= (size_t)n;
      d->moved += (unsigned long long)n;
      d->pipe_full = 0;
      progress = 1;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      d->writable = 0;
    } else {
      return -1;
    }
  }
  if (d->from_done && d->in_pipe == 0 && !d->shut) {
    (void)shutdown(d->to, SHUT_WR);
    d->shut = 1;
  }
  return progress;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: splice-relay IDLE_MS GRACE_MS NICE (client socket on fd 3, backend on fd 4)\n");
    return 3;
  }
  long long idle_ms = atoll(argv[1]);
  long long grace_ms = atoll(argv[2]);
  int niceness = atoi(argv[3]);
  /* Raising one's own niceness needs no privilege; if it fails the relay still works. */
  if (niceness > 0) {
    errno = 0;
    if (nice(niceness) == -1 && errno != 0) perror("splice-relay: nice");
  }
  pid_t gate = getppid();
  /* The relay lives no longer than the gate that owns its sockets. */
  if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != gate) return 4;
  signal(SIGPIPE, SIG_IGN);

  struct direction up = {.from = 3, .to = 4, .readable = 1, .writable = 1};
  struct direction down = {.from = 4, .to = 3, .readable = 1, .writable = 1};
  int type;
  socklen_t len = sizeof type;
  if (getsockopt(3, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || getsockopt(4, SOL_SOCKET, SO_TYPE, &type, &len) != 0) {
    fprintf(stderr, "splice-relay: fds 3 and 4 must be sockets\n");
    return 3;
  }
  if (open_pipe(&up) != 0 || open_pipe(&down) != 0) {
    perror("splice-relay: pipe");
    return 1;
  }

  long long last_move = now_ms();
  long long finished_at = -1; /* when the first side finished */
  int status = 0;
  for (;;) {
    int a = step(&up);
    int b = step(&down);
    if (a < 0 || b < 0) {
      status = 1;
      break;
    }
    long long t = now_ms();
    if (a > 0 || b > 0) {
      last_move = t;
      report(&up, &down, 0);
      continue;
    }
    if (up.shut && down.shut) break;
    if (finished_at < 0 && (up.shut || down.shut)) finished_at = t;

    long long wait = -1;
    if (idle_ms > 0) {
      wait = last_move + idle_ms - t;
      if (wait <= 0) {
        status = 2;
        break;
      }
    }
    if (finished_at >= 0) {
      long long left = finished_at + grace_ms - t;
      if (left <= 0) break;
      if (wait < 0 || left < wait) wait = left;
    }
    if (up.moved + down.moved > 0) {
      long long r = REPORT_MS;
      if (wait < 0 || r < wait) wait = r;
    }
    struct pollfd fds[2] = {{.fd = 3}, {.fd = 4}};
    struct direction *dirs[2] = {&up, &down};
    for (int i = 0; i < 2; i++) {
      struct direction *d = dirs[i];
      if (!d->from_done && !d->pipe_full) fds[i].events |= POLLIN | POLLRDHUP;
      if (d->in_pipe > 0) fds[d->to - 3].events |= POLLOUT;
    }
    if (poll(fds, 2, (int)wait) < 0 && errno != EINTR) {
      status = 1;
      break;
    }
    for (int i = 0; i < 2; i++) {
      struct direction *d = dirs[i];
      if (fds[i].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) d->readable = 1;
      if (fds[d->to - 3].revents & (POLLOUT | POLLHUP | POLLERR)) d->writable = 1;
    }
    /* An error or hang-up with nothing asked of that socket would wake poll forever. */
    for (int i = 0; i < 2; i++) {
      if ((fds[i].revents & (POLLERR | POLLHUP)) && !(fds[i].events & (POLLIN | POLLOUT))) {
        status = 1;
        goto out;
      }
    }
    report(&up, &down, 0);
  }
out:
  report(&up, &down, 1);
  return status;
}
