/*
 * srv_io — helper threads that write replies. See srv_io.h.
 *
 * A hand-off is one generation: the caller publishes the jobs, bumps the
 * generation and writes its own share; each helper, seeing the bump, writes
 * its share and counts itself done. Helpers spin for SPIN_NS after each
 * hand-off (under load the next one follows sooner) and then sleep on a
 * condition variable; the caller wakes sleepers only when there are some. The generation and the
 * sleeper count are sequentially consistent, so a helper going to sleep either sees the new
 * generation or is seen asleep.
 */
#include "srv_io.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* How long a helper spins for the next hand-off before it sleeps. Under a
 * pipelined load from 50 clients the loop hands off about every
 * millisecond (hundreds of commands an iteration); a helper asleep by then
 * costs the loop a futex wake-up, and the loop then waits out the helper's
 * scheduling delay, tens of microseconds on a virtual machine, against its
 * own share of the writes. So under load the helpers spin, as Redis's
 * io-threads do, and sleep once the loop has gone quiet. */
#define SPIN_NS 2000000

static struct {
    int n; /* threads, the caller included */
    int started;
    pthread_t th[SRV_IO_MAX];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct srv_io_job *jobs; /* the current generation's */
    size_t njobs;
    uint64_t gen;  /* atomic */
    uint64_t gen0; /* the generation when the helpers started */
    int left;      /* atomic: helpers still writing this generation */
    int sleepers;  /* atomic */
    bool stop;     /* atomic */
} io = {.n = 1, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void do_job(struct srv_io_job *j)
{
    j->done = 0;
    j->err = 0;
    while (j->done < j->len) {
        ssize_t w = write(j->fd, j->buf + j->done, j->len - j->done);
        if (w > 0) {
            j->done += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        j->err = w < 0 ? (errno == EWOULDBLOCK ? EAGAIN : errno) : EPIPE;
        return;
    }
}

static void run_share(int t, struct srv_io_job *jobs, size_t n, int nthreads)
{
    for (size_t i = (size_t)t; i < n; i += (size_t)nthreads)
        do_job(&jobs[i]);
}

/* Returns once the generation differs from seen, or on stop. */
static uint64_t wait_gen(uint64_t seen)
{
    uint64_t g, t0 = 0;
    for (unsigned i = 0;; i++) {
        g = __atomic_load_n(&io.gen, __ATOMIC_ACQUIRE);
        if (g != seen || __atomic_load_n(&io.stop, __ATOMIC_ACQUIRE))
            return g;
        cpu_relax();
        if ((i & 255) == 255) {
            uint64_t t = now_ns();
            if (!t0)
                t0 = t;
            else if (t - t0 > SPIN_NS)
                break;
        }
    }
    pthread_mutex_lock(&io.mu);
    __atomic_add_fetch(&io.sleepers, 1, __ATOMIC_SEQ_CST);
    while ((g = __atomic_load_n(&io.gen, __ATOMIC_SEQ_CST)) == seen &&
           !__atomic_load_n(&io.stop, __ATOMIC_SEQ_CST))
        pthread_cond_wait(&io.cv, &io.mu);
    __atomic_sub_fetch(&io.sleepers, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&io.mu);
    return g;
}

static void *helper_main(void *arg)
{
    int t = (int)(intptr_t)arg;
    pthread_setname_np(pthread_self(), "shmkv-io");
    uint64_t seen = io.gen0;
    for (;;) {
        seen = wait_gen(seen);
        if (__atomic_load_n(&io.stop, __ATOMIC_ACQUIRE))
            return NULL;
        run_share(t, io.jobs, io.njobs, io.n);
        __atomic_sub_fetch(&io.left, 1, __ATOMIC_RELEASE);
    }
}

int srv_io_start(int nthreads)
{
    if (nthreads > SRV_IO_MAX)
        nthreads = SRV_IO_MAX;
    io.n = 1;
    __atomic_store_n(&io.stop, false, __ATOMIC_RELEASE);
    io.gen0 = __atomic_load_n(&io.gen, __ATOMIC_RELAXED);
    int started = 0;
    for (int t = 1; t < nthreads; t++) {
        if (pthread_create(&io.th[t], NULL, helper_main, (void *)(intptr_t)t) != 0)
            break;
        started++;
    }
    io.started = started;
    if (started < nthreads - 1) {
        /* Shares are strided by the thread count, so a helper missing
         * would leave its share unwritten: go on alone. */
        srv_io_stop();
        return 1;
    }
    /* Helpers read io.n only after a hand-off, which publishes it. */
    io.n = nthreads < 1 ? 1 : nthreads;
    return io.n;
}

void srv_io_stop(void)
{
    pthread_mutex_lock(&io.mu);
    __atomic_store_n(&io.stop, true, __ATOMIC_SEQ_CST);
    pthread_cond_broadcast(&io.cv);
    pthread_mutex_unlock(&io.mu);
    for (int t = 1; t <= io.started; t++)
        pthread_join(io.th[t], NULL);
    io.started = 0;
    io.n = 1;
}

int srv_io_threads(void)
{
    return io.n;
}

void srv_io_write(struct srv_io_job *jobs, size_t n)
{
    int nt = io.n;
    if (nt == 1 || n < 2) {
        run_share(0, jobs, n, 1);
        return;
    }
    io.jobs = jobs;
    io.njobs = n;
    __atomic_store_n(&io.left, nt - 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&io.gen, 1, __ATOMIC_SEQ_CST); /* publishes the above */
    if (__atomic_load_n(&io.sleepers, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&io.mu);
        pthread_cond_broadcast(&io.cv);
        pthread_mutex_unlock(&io.mu);
    }
    run_share(0, jobs, n, nt);
    while (__atomic_load_n(&io.left, __ATOMIC_ACQUIRE))
        cpu_relax();
}
