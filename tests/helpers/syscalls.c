/* Makes exactly N getppid() calls, then a thread that makes K, then a forked child
 * that makes M; the parent waits for both. Used to check that `iolab observe`
 * counts exactly, across threads and children. usage: syscalls N M K [SPIN]
 * With SPIN=1 the parent loops forever (for --pid and SIGINT tests). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long k_calls;

static void *thread_main(void *arg) {
    (void)arg;
    for (long i = 0; i < k_calls; i++)
        syscall(SYS_getppid);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4)
        return 2;
    long n = atol(argv[1]), m = atol(argv[2]);
    int spin = argc > 4 && atoi(argv[4]) == 1;
    k_calls = atol(argv[3]);
    for (long i = 0; i < n; i++)
        syscall(SYS_getppid);
    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, NULL) != 0)
        return 3;
    pthread_join(t, NULL);
    pid_t c = fork();
    if (c < 0)
        return 4;
    if (c == 0) {
        for (long i = 0; i < m; i++)
            syscall(SYS_getppid);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    while (spin)
        syscall(SYS_getppid);
    return 0;
}
