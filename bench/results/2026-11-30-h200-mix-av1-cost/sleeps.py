#!/usr/bin/env python3
"""Runs a command and samples, every INTERVAL ms, where the threads whose name starts with
PREFIX are: running or runnable, or blocked in which system call, called from which mapped
file. The system call's own address is always libc's, so the caller is found by scanning the
thread's stack (/proc/<pid>/mem from the stack pointer of /proc/<pid>/task/<tid>/syscall) for
the first return address into an executable mapping that is not libc's (a heuristic: a stale
word on the stack can name the wrong file now and then). Needs ptrace rights over the command
(root, or the same user without Yama's restriction). Counts of (state, syscall, file) go to OUT.json, the most common first:
so that a loader's decoder threads' sleeps are told apart (a CUDA driver lock in libcuda, a
queue's futex in our binary, a sleep in nanosleep, an ioctl to the driver).
Usage: sleeps.py OUT.json PREFIX INTERVAL_MS -- command..."""
import bisect, collections, json, os, subprocess, sys, time

SYSCALLS = {0: "read", 1: "write", 7: "poll", 9: "mmap", 11: "munmap", 16: "ioctl", 24: "sched_yield",
            35: "nanosleep", 202: "futex", 230: "clock_nanosleep", 232: "epoll_wait", 271: "ppoll",
            281: "epoll_pwait", 7 + 1000: "?"}
out, prefix, interval = sys.argv[1], sys.argv[2], float(sys.argv[3]) / 1000
assert sys.argv[4] == "--"
proc = subprocess.Popen(sys.argv[5:])
counts = collections.Counter()
maps, starts, loaded = [], [], 0.0


def load_maps(pid):
    global maps, starts
    rows = []
    for line in open(f"/proc/{pid}/maps"):
        f = line.split()
        if len(f) >= 6 and "x" in f[1]:
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            rows.append((lo, hi, os.path.basename(f[5])))
    rows.sort()
    maps, starts = rows, [r[0] for r in rows]


def where(pc):
    i = bisect.bisect_right(starts, pc) - 1
    if i >= 0 and maps[i][0] <= pc < maps[i][1]:
        return maps[i][2]
    return None


def caller(pid, sp):
    """The first file other than libc that a word of the stack above `sp` points into."""
    try:
        with open(f"/proc/{pid}/mem", "rb") as mem:
            mem.seek(sp)
            words = memoryview(mem.read(16384)).cast("Q")
    except (OSError, ValueError, OverflowError):
        return "?"
    for w in words:
        f = where(w)
        if f and not f.startswith(("libc.so", "libc-", "ld-linux", "libpthread", "[vdso]")):
            return f
    return "?"


def sample(pid):
    for tid in os.listdir(f"/proc/{pid}/task"):
        d = f"/proc/{pid}/task/{tid}"
        try:
            if not open(f"{d}/comm").read().startswith(prefix):
                continue
            state = open(f"{d}/stat").read().rsplit(")", 1)[1].split()[0]
            if state == "R":
                counts[("running",)] += 1
                continue
            sc = open(f"{d}/syscall").read().split()
        except (OSError, IndexError):
            continue
        if not sc or sc[0] in ("running", "-1"):
            counts[(state, sc[0] if sc else "?")] += 1
            continue
        nr = int(sc[0])
        counts[(state, SYSCALLS.get(nr, str(nr)), caller(pid, int(sc[-2], 16)))] += 1


while proc.poll() is None:
    try:
        if time.time() - loaded > 2:
            load_maps(proc.pid)
            loaded = time.time()
        sample(proc.pid)
    except OSError:
        pass
    time.sleep(interval)
total = sum(counts.values()) or 1
json.dump([[*k, n, round(n / total, 4)] for k, n in counts.most_common()], open(out, "w"))
sys.exit(proc.returncode)
