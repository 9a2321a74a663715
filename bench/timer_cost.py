#!/usr/bin/env python3
"""What a short sleep costs the sleeping thread on this machine: the floor
under every sleeping completion policy (interrupt, hybrid, PAS, DPAS,
adaptive's naps) in study 000's (vi) grid.

Three measurements, each the median of --rounds rounds:

1. CPU time (RUSAGE_THREAD) per clock_nanosleep of 20, 50 and 100 us, timer
   slack 1 ns (as iolab's sleeping models set it): the thread's whole price of
   one sleep and wakeup, independent of the sleep's length.
2. Arming and disarming a timerfd 50 us ahead (the earliest timer on the CPU:
   the kernel reprograms the local timer, on x86 a TSC_DEADLINE MSR write)
   against 1 s ahead (behind the tick: nothing to reprogram). Under a
   hypervisor each such write is a VM exit; the difference is its price.
3. With --msr (root, perf, tracefs msr events): `perf stat -e
   msr:write_msr` around the 50 us sleeps, writes per sleep in the thread.

Run: python3 bench/timer_cost.py [--rounds 5] [--n 5000] [--msr]
"""
import argparse, ctypes, ctypes.util, os, resource, statistics, subprocess, sys, time

libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
CLOCK_MONOTONIC = 1
PR_SET_TIMERSLACK = 29


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", Timespec), ("it_value", Timespec)]


def thread_cpu_us():
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return (r.ru_utime + r.ru_stime) * 1e6


def sleep_cost(us, n):
    """CPU us of this thread per clock_nanosleep(us), and wall us per sleep."""
    ts = Timespec(0, us * 1000)
    c0, w0 = thread_cpu_us(), time.monotonic()
    for _ in range(n):
        libc.clock_nanosleep(CLOCK_MONOTONIC, 0, ctypes.byref(ts), None)
    return (thread_cpu_us() - c0) / n, (time.monotonic() - w0) * 1e6 / n


def arm_cost(ns, n):
    """Wall us per timerfd arm + disarm pair, `ns` ahead."""
    fd = libc.timerfd_create(CLOCK_MONOTONIC, 0)
    if fd < 0:
        sys.exit(f"timerfd_create failed: errno {ctypes.get_errno()}")
    arm = Itimerspec(Timespec(0, 0), Timespec(ns // 1_000_000_000, ns % 1_000_000_000))
    off = Itimerspec(Timespec(0, 0), Timespec(0, 0))
    settime = libc.timerfd_settime
    t0 = time.monotonic()
    for _ in range(n):
        settime(fd, 0, ctypes.byref(arm), None)
        settime(fd, 0, ctypes.byref(off), None)
    dt = (time.monotonic() - t0) * 1e6 / n
    os.close(fd)
    return dt


def msr_writes_per_sleep(n):
    code = (
        "import ctypes,ctypes.util\n"
        "l=ctypes.CDLL(ctypes.util.find_library('c'))\n"
        "l.prctl(29,1,0,0,0)\n"
        "class T(ctypes.Structure): _fields_=[('s',ctypes.c_long),('n',ctypes.c_long)]\n"
        f"t=T(0,50000)\n"
        f"[l.clock_nanosleep(1,0,ctypes.byref(t),None) for _ in range({n})]\n"
    )
    p = subprocess.run(
        ["perf", "stat", "-x,", "-e", "msr:write_msr", sys.executable, "-c", code],
        capture_output=True, text=True)
    for line in p.stderr.splitlines():
        if "msr:write_msr" in line:
            v = line.split(",")[0]
            if v.isdigit():
                return int(v) / n
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--msr", action="store_true", help="count TSC_DEADLINE writes with perf")
    a = ap.parse_args()
    libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    rows = {20: [], 50: [], 100: []}
    near, far = [], []
    for _ in range(a.rounds):
        for us in rows:
            rows[us].append(sleep_cost(us, a.n))
        near.append(arm_cost(50_000, a.n))
        far.append(arm_cost(1_000_000_000, a.n))
    print(f"{os.cpu_count()} CPUs, {a.rounds} rounds of {a.n}; medians")
    for us, v in rows.items():
        cpu = statistics.median(x[0] for x in v)
        wall = statistics.median(x[1] for x in v)
        print(f"clock_nanosleep({us:>3} us): {cpu:6.2f} us CPU per sleep, {wall:6.1f} us wall "
              f"({wall - us:5.1f} us late)")
    n, f = statistics.median(near), statistics.median(far)
    print(f"timerfd arm+disarm 50 us ahead: {n:6.2f} us; 1 s ahead: {f:6.2f} us; "
          f"reprogramming the CPU's timer costs {n - f:5.2f} us per pair")
    if a.msr:
        w = msr_writes_per_sleep(a.n)
        print("msr writes per 50 us sleep in the thread: " +
              ("not counted (needs root, perf and tracefs msr events)" if w is None else f"{w:.2f}"))


if __name__ == "__main__":
    main()
