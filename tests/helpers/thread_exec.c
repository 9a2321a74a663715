/* exec from a thread other than the main thread: the main thread starts a
 * thread and spins; the thread makes N getppid() calls and
 * execs this program again with "after", which makes N more and exits. The
 * kernel then kills the main thread and gives the exec'ing thread the
 * process's pid, so a tracer keyed on thread ids must follow the exec.
 * The main thread spins without system calls once pthread_create has returned,
 * and the thread starts only then, so the main thread is always killed in
 * user space: the same calls every run, under any tracer.
 * usage: thread_exec N   (the exec'd image runs as: thread_exec after N) */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static char *self;
static char *count;
static int main_spinning;

static void calls(long n) {
    for (long i = 0; i < n; i++)
        syscall(SYS_getppid);
}

static void *thread_main(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&main_spinning, __ATOMIC_ACQUIRE))
        ;
    calls(atol(count));
    char *argv[] = {self, "after", count, NULL};
    execv("/proc/self/exe", argv);
    _exit(5);
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "after") == 0) {
        calls(atol(argv[2]));
        return 0;
    }
    if (argc != 2)
        return 2;
    self = argv[0];
    count = argv[1];
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL) != 0)
        return 3;
    __atomic_store_n(&main_spinning, 1, __ATOMIC_RELEASE);
    for (;;)
        ; /* until the thread's exec ends this thread */
}
