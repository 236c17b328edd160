/* A busy loop pinned to one core that reads the monotonic clock and records every gap between two
 * reads longer than a threshold: the time the loop did not run. A gap during which the thread's
 * involuntary context switches did not grow was not the guest's scheduler running another thread
 * (an interrupt, or the hypervisor running something else on this virtual CPU: stolen time).
 *
 *   gap_probe CPU SECONDS THRESHOLD_US [idle]
 *
 * With "idle" the loop runs under SCHED_IDLE: only when nothing else wants the core, so beside a
 * load it keeps the virtual CPU from halting without taking a core from the load; its gaps without
 * a switch are still the host's.
 *
 * Prints one line per gap, "start_s length_us preempted" (preempted 1 when the guest switched
 * threads), then a last line "busy_s SECONDS"; SIGINT ends the loop early, the same way. bench/bench_steal.py compiles, runs and reads it.
 * Written in C because a Python loop's own pauses (its allocator, its eval loop) are as long as the
 * gaps it looks for.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static volatile sig_atomic_t stop = 0;

static void on_interrupt(int sig) {
    (void)sig;
    stop = 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long involuntary_switches(void) {
    struct rusage usage;
    getrusage(RUSAGE_THREAD, &usage);
    return usage.ru_nivcsw;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: gap_probe CPU SECONDS THRESHOLD_US [idle]\n");
        return 2;
    }
    int cpu = atoi(argv[1]);
    double seconds = atof(argv[2]);
    double threshold_s = atof(argv[3]) * 1e-6;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        perror("sched_setaffinity");
        return 2;
    }
    if (argc == 5) {
        struct sched_param param = {0};
        if (sched_setscheduler(0, SCHED_IDLE, &param) != 0) {
            perror("sched_setscheduler");
            return 2;
        }
    }
    signal(SIGINT, on_interrupt);
    double start = now_s();
    double last = start;
    long switches = involuntary_switches();
    while (last - start < seconds && !stop) {
        double t = now_s();
        if (t - last > threshold_s) {
            long after = involuntary_switches();
            printf("%.6f %.1f %d\n", last - start, (t - last) * 1e6, after != switches);
            switches = after;
        }
        last = t;
    }
    printf("busy_s %.6f\n", last - start);
    return 0;
}
