/*
 * Storage faults for the mark file, preloaded (LD_PRELOAD) into a test server: while the file
 * named by SNOWFLAKE_FAULT_FILE holds "enospc", writes to the mark's temporary file fail as on a
 * full disk; while it holds "eio", fsyncs of the mark file and its temporary file fail as on a
 * failing device; while it holds "stall", those fsyncs do not return, as on a hung device or NFS
 * server, until it holds something else or is gone (polled every 10 ms; signals do not end the
 * wait, as they do not end an fsync stuck in the kernel). Every other file, WAL and tables
 * included, is left alone. Used by test/t/013_storage_faults.pl and
 * test/t/021_stalled_mark_write.pl.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The fault asked for now, re-read on every call to a mark file so that a test can switch it. */
static int fault_is(const char *name) {
    const char *control = getenv("SNOWFLAKE_FAULT_FILE");
    char text[16] = "";
    int fd;
    ssize_t size;
    if (control == NULL || (fd = open(control, O_RDONLY)) < 0) {
        return 0;
    }
    size = read(fd, text, sizeof(text) - 1);
    close(fd);
    text[size > 0 ? size : 0] = '\0';
    return strncmp(text, name, strlen(name)) == 0;
}

/* Whether fd is the mark file or its temporary file, by the path the kernel keeps for it. */
static int is_mark_file(int fd) {
    char link[64];
    char path[4096];
    ssize_t size;
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    size = readlink(link, path, sizeof(path) - 1);
    if (size <= 0) {
        return 0;
    }
    path[size] = '\0';
    return strstr(path, "/snowflake_mark") != NULL;
}

ssize_t write(int fd, const void *buffer, size_t count) {
    static ssize_t (*real_write)(int, const void *, size_t);
    if (real_write == NULL) {
        real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    }
    if (is_mark_file(fd) && fault_is("enospc")) {
        errno = ENOSPC;
        return -1;
    }
    return real_write(fd, buffer, count);
}

int fsync(int fd) {
    static int (*real_fsync)(int);
    if (real_fsync == NULL) {
        real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    }
    if (is_mark_file(fd)) {
        while (fault_is("stall")) {
            usleep(10000);
        }
        if (fault_is("eio")) {
            errno = EIO;
            return -1;
        }
    }
    return real_fsync(fd);
}
