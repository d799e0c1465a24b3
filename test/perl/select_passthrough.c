// Preloaded before libfaketime by the TAP tests (test/perl/SnowflakeTest.pm): libfaketime's own
// select() marks the calling thread as one whose clock is not faked while it waits, and a server
// before 16 starts background workers from the postmaster's signal handlers, which interrupt its
// select(), so that those workers would keep the real clock for good. This select() goes straight
// to the C library.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <sys/select.h>

typedef int (*select_function)(int, fd_set *, fd_set *, fd_set *, struct timeval *);

int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
           struct timeval *timeout) {
    static select_function libc_select;
    if (libc_select == NULL) {
        libc_select =
            (select_function)dlsym(dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD), "select");
    }
    return libc_select(nfds, readfds, writefds, exceptfds, timeout);
}
