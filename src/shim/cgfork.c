#include "shim/cgfork.h"

#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(SYS_clone3) && defined(CLONE_INTO_CGROUP)
/* The child starts on its own stack at the instruction after the system call: nothing of the
 * caller's frame may be used there, so it calls child(arg) from here and exits if that ever
 * returns.  The parent (rax: the pid or -errno) goes on as from any system call. */
static long clone3_call(struct clone_args *ca, void (*child)(void *), void *arg) {
        long ret;
        register void (*fn)(void *) __asm__("r12") = child;
        register void *fn_arg __asm__("r13") = arg;
        __asm__ volatile("syscall\n\t"
                         "test %%rax, %%rax\n\t"
                         "jnz 1f\n\t"
                         "xor %%ebp, %%ebp\n\t"
                         "mov %%r13, %%rdi\n\t"
                         "call *%%r12\n\t"
                         "mov $127, %%edi\n\t"
                         "mov %[exit], %%eax\n\t"
                         "syscall\n\t"
                         "hlt\n"
                         "1:"
                         : "=a"(ret)
                         : "0"((long) SYS_clone3), "D"(ca), "S"(sizeof *ca), "r"(fn), "r"(fn_arg), [exit] "i"(SYS_exit)
                         : "rcx", "r11", "memory");
        return ret;
}
#define HAVE_CLONE3_CALL 1
#endif

#ifdef HAVE_CLONE3_CALL
/* One stack for every job of this supervisor, grown when a command's arguments need more
 * (execvp may copy the argument vector onto it), with a guard page below it. */
static void *stack_base;
static size_t stack_size;

static void *stack_top(size_t argc) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        size_t want = ((argc + 16) * sizeof(char *) + (64u << 10) + page - 1) / page * page;
        if (stack_base && stack_size >= want)
                return (char *) stack_base + stack_size;
        if (stack_base)
                (void) munmap((char *) stack_base - page, stack_size + page);
        stack_base = NULL;
        char *m = mmap(NULL, want + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (m == MAP_FAILED)
                return NULL;
        if (mprotect(m, page, PROT_NONE) < 0) {
                (void) munmap(m, want + page);
                return NULL;
        }
        stack_base = m + page;
        stack_size = want;
        return (char *) stack_base + stack_size;
}

pid_t shim_fork_into_cgroup(int cgroup_fd, size_t argc, void (*child)(void *), void *arg) {
        char *top = stack_top(argc);
        if (!top)
                return -ENOMEM;
        struct clone_args ca;
        memset(&ca, 0, sizeof ca);
        ca.flags = CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP;
        ca.exit_signal = SIGCHLD;
        ca.stack = (uint64_t) (uintptr_t) stack_base;
        ca.stack_size = (uint64_t) (top - (char *) stack_base);
        ca.cgroup = (uint64_t) cgroup_fd;
        return (pid_t) clone3_call(&ca, child, arg);
}
#else
pid_t shim_fork_into_cgroup(int cgroup_fd, size_t argc, void (*child)(void *), void *arg) {
        (void) cgroup_fd, (void) argc, (void) child, (void) arg;
        return -ENOSYS;
}
#endif
