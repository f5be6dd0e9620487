/* A full disk for git's object store, from the moment pai records a history operation's
 * intent: loaded with LD_PRELOAD into pai by tests/it/crash_suite.rs. Every write into a file
 * under `.git/objects/` fails with ENOSPC once a file under the state directory's `ops/`
 * (an operation record, `<id>.tmp`, not a plan's journal `<id>.plan.tmp`) has been written.
 * It keys on the file written to, not on a call's number: pai's work moves between its
 * runtime's threads, so a call's number in its thread differs from run to run. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static atomic_int intent_seen;
static atomic_int failed;

static int path_of(int fd, char *out, size_t size) {
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, out, size - 1);
    if (n < 0) return 0;
    out[n] = 0;
    return 1;
}

static int ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

ssize_t write(int fd, const void *buf, size_t count) {
    static ssize_t (*real_write)(int, const void *, size_t);
    if (!real_write) real_write = (ssize_t (*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    char path[4096];
    if (fd > 2 && path_of(fd, path, sizeof path)) {
        if (strstr(path, "/ops/") && ends_with(path, ".tmp") && !ends_with(path, ".plan.tmp")) {
            atomic_store(&intent_seen, 1);
        } else if (atomic_load(&intent_seen) && strstr(path, "/.git/objects/")) {
            /* The test checks the shim reached the object store: PAI_SHIM_REPORT names a file
             * made at the first failed write. */
            if (!atomic_exchange(&failed, 1)) {
                const char *to = getenv("PAI_SHIM_REPORT");
                if (to) {
                    int made = open(to, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                    if (made >= 0) close(made);
                }
            }
            errno = ENOSPC;
            return -1;
        }
    }
    return real_write(fd, buf, count);
}
