/*
 * srv_os — the open-file limit, the reserved descriptor, signals and the
 * supervisor's protocols. See srv_os.h.
 */
#include "srv_os.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "srv.h"

/* ---- the open-file limit ---- */

static int rocksdb_files = SRV_OS_ROCKSDB_FILES;

/* The soft limit after asking for want: raised as far as the system lets
 * (a process may raise its soft limit to its hard one; root the hard one
 * too). */
static rlim_t raise_limit(rlim_t want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    if (rl.rlim_cur >= want)
        return rl.rlim_cur;
    struct rlimit up = {want, rl.rlim_max > want ? rl.rlim_max : want};
    if (setrlimit(RLIMIT_NOFILE, &up) != 0 && rl.rlim_max > rl.rlim_cur) {
        up = (struct rlimit){rl.rlim_max, rl.rlim_max};
        (void)setrlimit(RLIMIT_NOFILE, &up);
    }
    getrlimit(RLIMIT_NOFILE, &rl);
    return rl.rlim_cur;
}

int srv_os_fd_limit(int *maxclients, int *files)
{
    rlim_t want = (rlim_t)*maxclients + SRV_OS_RESERVED_FDS + SRV_OS_ROCKSDB_FILES;
    rlim_t limit = raise_limit(want);
    rocksdb_files = SRV_OS_ROCKSDB_FILES;
    if (limit < want) {
        long room = (long)limit - SRV_OS_RESERVED_FDS;
        long share = room / 4 < 16 ? 16 : room / 4;
        if (share > SRV_OS_ROCKSDB_FILES)
            share = SRV_OS_ROCKSDB_FILES;
        long clients = room - share;
        if (clients < 1) {
            srv_log(LOG_WARNING,
                    "The open-file limit of %llu is not enough to start: shmkvd needs at least "
                    "%d (ulimit -n, or LimitNOFILE in a systemd unit)",
                    (unsigned long long)limit, SRV_OS_RESERVED_FDS + 16 + 1);
            return -1;
        }
        rocksdb_files = (int)share;
        if (clients < *maxclients) {
            srv_log(LOG_WARNING,
                    "maxclients %d needs %llu open files; the limit is %llu: maxclients is "
                    "lowered to %ld, and RocksDB keeps at most %d table files open. Raise "
                    "'ulimit -n' (LimitNOFILE) for more.",
                    *maxclients, (unsigned long long)want, (unsigned long long)limit, clients,
                    rocksdb_files);
            *maxclients = (int)clients;
        }
    }
    *files = rocksdb_files;
    return 0;
}

bool srv_os_maxclients_fit(int n, int *most)
{
    rlim_t want = (rlim_t)n + SRV_OS_RESERVED_FDS + (rlim_t)rocksdb_files;
    rlim_t limit = raise_limit(want);
    if (limit >= want)
        return true;
    long fit = (long)limit - SRV_OS_RESERVED_FDS - rocksdb_files;
    *most = fit > 1 ? (int)fit : 1;
    return false;
}

/* ---- the reserved descriptor ---- */

static int reserve_fd = -1;

void srv_os_reserve_fd(void)
{
    if (reserve_fd < 0)
        reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

bool srv_os_refuse_waiting(int lfd)
{
    if (reserve_fd < 0)
        return false;
    close(reserve_fd);
    reserve_fd = -1;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
        static const char msg[] = "-ERR max number of clients reached\r\n";
        ssize_t w = write(fd, msg, sizeof msg - 1);
        (void)w;
        close(fd);
    }
    srv_os_reserve_fd();
    return fd >= 0;
}

/* ---- signals ---- */

void srv_os_signals(void (*on_stop)(int))
{
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigemptyset(&ign.sa_mask);
    sigaction(SIGHUP, &ign, NULL);
    sigaction(SIGPIPE, &ign, NULL);
}

/* ---- supervised ---- */

enum { SUP_UPSTART, SUP_SYSTEMD, SUP_AUTO, SUP_NO };
static int supervisor = SUP_NO;

void srv_os_supervise(int mode)
{
    if (mode == SUP_AUTO)
        mode = getenv("NOTIFY_SOCKET") ? SUP_SYSTEMD : getenv("UPSTART_JOB") ? SUP_UPSTART : SUP_NO;
    if (mode == SUP_SYSTEMD && !getenv("NOTIFY_SOCKET")) {
        srv_log(LOG_WARNING, "supervised systemd, but NOTIFY_SOCKET is not set: no readiness "
                             "will be reported");
        mode = SUP_NO;
    }
    if (mode == SUP_UPSTART && !getenv("UPSTART_JOB")) {
        srv_log(LOG_WARNING, "supervised upstart, but UPSTART_JOB is not set: no readiness "
                             "will be reported");
        mode = SUP_NO;
    }
    supervisor = mode;
    if (mode == SUP_SYSTEMD)
        srv_log(LOG_NOTICE, "supervised by systemd: readiness goes to NOTIFY_SOCKET");
    else if (mode == SUP_UPSTART)
        srv_log(LOG_NOTICE, "supervised by upstart: SIGSTOP once ready");
}

const char *srv_os_supervisor(void)
{
    return supervisor == SUP_SYSTEMD ? "systemd" : supervisor == SUP_UPSTART ? "upstart" : "no";
}

void srv_os_notify(const char *state)
{
    if (supervisor != SUP_SYSTEMD)
        return;
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = path ? strlen(path) : 0;
    if (n < 2 || n >= sizeof sa.sun_path || (path[0] != '/' && path[0] != '@'))
        return;
    memcpy(sa.sun_path, path, n);
    if (path[0] == '@')
        sa.sun_path[0] = '\0'; /* the abstract namespace */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len) < 0)
        srv_log(LOG_WARNING, "cannot tell systemd %s: %s", state, strerror(errno));
    close(fd);
}

void srv_os_ready(void)
{
    if (supervisor == SUP_SYSTEMD) {
        srv_os_notify("STATUS=Ready to accept connections");
        srv_os_notify("READY=1");
    } else if (supervisor == SUP_UPSTART) {
        raise(SIGSTOP); /* upstart's "expect stop" */
        unsetenv("UPSTART_JOB");
    }
}
