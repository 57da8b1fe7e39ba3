#!/usr/bin/env python3
"""Splits a CPU profile into the steps of a request: reads folded stacks
(`inferno-collapse-perf --kernel` output: one `frame;frame;...;leaf COUNT`
line per distinct stack, kernel frames suffixed `_[k]`) and prints a Markdown
table of the share of samples per step.

    bench/costs.py profile.folded [--per-op-us 16.3]

A sample goes to the step of its leaf frame: the kernel by what the stack
was doing (network send/receive, polling, scheduling and wake-ups, other),
the allocator, or the first frame from the leaf up that names a part of the
server (RocksDB, storage layout, query executor, protocol, transport, tokio).
Leaves that name none (libc's memcmp/memcpy, std collections) take the step
of the nearest caller that does, when the stack has one. With --per-op-us (the server CPU per
operation measured alongside), each step's share is also given in µs.
"""
import argparse
import re
import sys

KERNEL_NETWORK = re.compile(r"tcp_|sock_|inet_|ip_|sendmsg|sendto|recvfrom|recvmsg|"
                            r"__sys_send|__sys_recv|skb|netif_|net_rx|loopback|_copy_to_iter|_copy_from_iter|"
                            r"ksys_write|ksys_read|vfs_write|vfs_read")
KERNEL_POLL = re.compile(r"epoll|ep_poll|do_poll")
KERNEL_SCHED = re.compile(r"schedule|finish_task_switch|futex|try_to_wake_up|ttwu|nanosleep|"
                          r"_raw_spin_unlock_irqrestore|pick_next|enqueue_task|dequeue_task")
ALLOC = re.compile(r"^(_?mi_|mi_|malloc|free|cfree|realloc|calloc|operator new|operator delete|"
                   r"__libc_malloc|__libc_free|_int_malloc|_int_free|<mimalloc::|__rustc::__rust_|"
                   r"alloc::raw_vec::)")
SYSCALL_STUBS = re.compile(r"^(__send|__libc_send|send|sendmsg|writev|__libc_recv|recv|read|write|"
                           r"epoll_wait|sched_getcpu|__vdso_clock_gettime|clock_gettime)$")
STEPS = [
    ("RocksDB", re.compile(r"rocksdb::|rocksdb_|librocksdb")),
    ("storage: layout and decoding (rocksandra_storage*)", re.compile(r"rocksandra_storage")),
    ("executor: planning, reading rows, building results (rocksandra_query)", re.compile(r"rocksandra_query")),
    ("protocol: frames and value encoding (rocksandra_wire)", re.compile(r"rocksandra_wire")),
    ("server: connections, dispatch, auth, metrics (rocksandra_server)", re.compile(r"rocksandra_server")),
    ("tokio runtime", re.compile(r"tokio::")),
]


def step_of(frames):
    leaf = frames[-1]
    if leaf.endswith("_[k]"):
        stack = ";".join(frames)
        if KERNEL_NETWORK.search(stack):
            return "kernel: network send and receive"
        if KERNEL_POLL.search(stack):
            return "kernel: polling (epoll)"
        if KERNEL_SCHED.search(stack):
            return "kernel: scheduling and wake-ups"
        return "kernel: other (interrupts, page faults, timers)"
    if ALLOC.search(leaf):
        return "allocation (mimalloc, RocksDB's malloc)"
    if SYSCALL_STUBS.search(leaf):
        return "libc system-call and clock stubs"
    for frame in reversed(frames):
        for name, pattern in STEPS:
            if pattern.search(frame):
                return name
    # Without frame pointers (release builds have none) perf's stacks often
    # end at the leaf: shared code whose caller is lost.
    if re.search(r"mem(cmp|cpy|move|set)", leaf):
        return "libc memcmp/memcpy, caller not in the stack"
    return "Rust collections and bytes (Vec clone/collect, BytesMut), caller not in the stack"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folded")
    ap.add_argument("--per-op-us", type=float)
    opts = ap.parse_args()
    totals = {}
    with open(opts.folded) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            step = step_of(stack.split(";"))
            totals[step] = totals.get(step, 0) + int(count)
    all_samples = sum(totals.values())
    if not all_samples:
        sys.exit("no samples in %s" % opts.folded)
    head = "| step | share of server CPU |" + (" µs per operation |" if opts.per_op_us else "")
    print(head)
    print("|---|---|" + ("---|" if opts.per_op_us else ""))
    for step, n in sorted(totals.items(), key=lambda kv: -kv[1]):
        share = n / all_samples
        print("| %s | %.1f%% |%s" % (step, 100 * share,
                                     " %.1f |" % (share * opts.per_op_us) if opts.per_op_us else ""))
    print("| all | 100%% |%s" % (" %.1f |" % opts.per_op_us if opts.per_op_us else ""))


if __name__ == "__main__":
    main()
