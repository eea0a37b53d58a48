#!/usr/bin/env python3
"""Runs a command and reports, per thread group (name without its number), the scheduler's
view of its threads over the command's life: CPU time, time runnable but waiting for a core
(/proc/<pid>/task/<tid>/schedstat), voluntary and involuntary context switches. With
`--batch PREFIX`, threads whose name starts with PREFIX are moved to SCHED_BATCH as they
appear (a batch thread never preempts a running one when it wakes; it waits for the tick or a
free core). The host's CPU time stolen by the hypervisor over the command's life comes from
/proc/stat's steal column (seconds, all CPUs). Usage: threads.py OUT.json [--batch PREFIX] --
command..."""
import json, os, re, subprocess, sys, time

out = sys.argv[1]
args = sys.argv[2:]
batch = None
if args[0] == "--batch":
    batch, args = args[1], args[2:]
assert args[0] == "--"


def steal():
    fields = open("/proc/stat").readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK")


steal0, t0 = steal(), time.time()
proc = subprocess.Popen(args[1:])
seen, moved = {}, set()


def sample(pid):
    for tid in os.listdir(f"/proc/{pid}/task"):
        d = f"/proc/{pid}/task/{tid}"
        try:
            comm = open(f"{d}/comm").read().strip()
            run, wait, slices = map(int, open(f"{d}/schedstat").read().split())
            st = dict(l.split(":\t") for l in open(f"{d}/status").read().splitlines() if ":\t" in l)
        except (OSError, ValueError):
            continue
        if batch and comm.startswith(batch) and tid not in moved:
            try:
                os.sched_setscheduler(int(tid), os.SCHED_BATCH, os.sched_param(0))
                moved.add(tid)
            except OSError as e:
                print("sched_setscheduler", tid, e, file=sys.stderr)
        seen[tid] = (comm, run, wait, slices, int(st["voluntary_ctxt_switches"]),
                     int(st["nonvoluntary_ctxt_switches"]))


while proc.poll() is None:
    try:
        sample(proc.pid)
    except OSError:
        pass
    time.sleep(0.2)
groups = {}
for comm, run, wait, slices, vol, nonvol in seen.values():
    g = groups.setdefault(re.sub(r"[-_]?\d+$", "", comm), dict(threads=0, run_s=0.0, runqueue_wait_s=0.0,
                                                                slices=0, voluntary=0, involuntary=0))
    g["threads"] += 1
    g["run_s"] += run / 1e9
    g["runqueue_wait_s"] += wait / 1e9
    g["slices"] += slices
    g["voluntary"] += vol
    g["involuntary"] += nonvol
json.dump({"batch": batch, "moved": len(moved), "groups": groups, "steal_s": steal() - steal0,
           "wall_s": time.time() - t0}, open(out, "w"))
sys.exit(proc.returncode)
