/* The same system calls as MimesisBench's posix backend, in a tight loop: the reference for
 * bench/bench_posix.py.  Usage: posix_loop DIR N TYPE
 * Makes N files DIR/t<TYPE>_<i>: create (open O_CREAT|O_EXCL|O_WRONLY|O_NOFOLLOW + close), then
 * open (O_RDONLY|O_NOFOLLOW + close), then stat (lstat), then delete (unlink); prints one line
 * per phase: "<phase> <ops> <seconds> <ops/s>". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void report(const char *phase, long n, double t0, double t1) {
    printf("%s %ld %.6f %.1f\n", phase, n, t1 - t0, (double)n / (t1 - t0));
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s DIR N TYPE\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    long n = atol(argv[2]);
    int type = atoi(argv[3]);
    char **paths = malloc(sizeof(char *) * (size_t)n);
    for (long i = 0; i < n; i++) {
        if (asprintf(&paths[i], "%s/t%d_%ld", dir, type, i) < 0) return 1;
    }
    long failed = 0;
    double t0 = now();
    for (long i = 0; i < n; i++) {
        int fd = open(paths[i], O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) failed++; else close(fd);
    }
    double t1 = now();
    report("create", n, t0, t1);
    t0 = now();
    for (long i = 0; i < n; i++) {
        int fd = open(paths[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) failed++; else close(fd);
    }
    t1 = now();
    report("open", n, t0, t1);
    struct stat st;
    t0 = now();
    for (long i = 0; i < n; i++) {
        if (lstat(paths[i], &st) != 0) failed++;
    }
    t1 = now();
    report("getfileinfo", n, t0, t1);
    t0 = now();
    for (long i = 0; i < n; i++) {
        if (unlink(paths[i]) != 0) failed++;
    }
    t1 = now();
    report("delete", n, t0, t1);
    printf("failed %ld\n", failed);
    return failed ? 1 : 0;
}
