#!/usr/bin/env python3
"""PyTorch's NCCL collectives timed the way `perflab comm` times NCCL, for a side-by-side comparison.

Same sizes (-b/-e/-f, nccl-tests' S), same timing (CUDA events around every operation on every rank, the stream
held while the host enqueues a chunk -- torch.cuda._sleep stands in for perflab's latch -- and one untimed
operation that lines the ranks up), same statistics (p50/p99 over iterations x ranks) and the same busbw
factors: allreduce 2(n-1)/n, alltoall/allgather/reducescatter (n-1)/n.

    python3 scripts/torch_nccl_bench.py --collectives alltoall,allreduce -b 1m -e 1g --json torch.json
    torchrun --nproc_per_node=4 scripts/torch_nccl_bench.py ...   (or let it spawn one process per GPU)

Unlike the other scripts/torch_*_bench.py, neither perflab.bench nor torch.compile: a collective's time spans every
rank's stream (perflab.bench times one process's), and compiling the Python around an NCCL call leaves the NCCL kernel
that is timed as it is. The script says so when it starts.
"""
import argparse
import json
import os
import socket
import statistics
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "fp64": torch.float64,
          "int32": torch.int32}
CHUNK = 200                 # operations enqueued per held chunk (the launch queue holds about a thousand)
HOLD_US_PER_OP = 60.0       # how long the stream is held per enqueued operation: longer than Python takes


def parse_size(text):
    text = text.strip().lower().rstrip("b").rstrip("i")
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:], 1)
    return int(text[:-1] if mult > 1 else text) * mult


def sizes(lo, hi, factor):
    s, out = lo, []
    while s <= hi:
        out.append(s)
        s = int(s * factor) if int(s * factor) > s else s + 1
    return out


def busbw_factor(coll, n):
    return {"allreduce": 2.0 * (n - 1) / n, "alltoall": (n - 1) / n, "allgather": (n - 1) / n,
            "reducescatter": (n - 1) / n}.get(coll, 1.0)


def percentile(sorted_x, p):
    """Linear between closest ranks (numpy's default, perflab's pl_percentile_sorted)."""
    if not sorted_x:
        return float("nan")
    k = (len(sorted_x) - 1) * p / 100.0
    f = int(k)
    c = min(f + 1, len(sorted_x) - 1)
    return sorted_x[f] + (sorted_x[c] - sorted_x[f]) * (k - f)


def make_op(coll, size, dtype, n, rank, dev):
    elt = torch.tensor([], dtype=dtype).element_size()
    count = size // elt
    if coll == "allreduce":  # torch's all_reduce is in place
        t = torch.ones(count, dtype=dtype, device=dev)
        return (lambda: dist.all_reduce(t)), count * elt
    per = count // n
    if per == 0:
        return None, 0
    if coll == "alltoall":
        inp = torch.ones(per * n, dtype=dtype, device=dev)
        out = torch.empty_like(inp)
        return (lambda: dist.all_to_all_single(out, inp)), per * n * elt
    if coll == "allgather":
        inp = torch.ones(per, dtype=dtype, device=dev)
        out = torch.empty(per * n, dtype=dtype, device=dev)
        return (lambda: dist.all_gather_into_tensor(out, inp)), per * n * elt
    if coll == "reducescatter":
        inp = torch.ones(per * n, dtype=dtype, device=dev)
        out = torch.empty(per, dtype=dtype, device=dev)
        return (lambda: dist.reduce_scatter_tensor(out, inp)), per * n * elt
    raise ValueError(coll)


def time_op(op, iters, warmup, hold, cycles_per_us):
    for _ in range(warmup):
        op()
    torch.cuda.synchronize()
    samples = []
    done = 0
    while done < iters:
        chunk = min(CHUNK, iters - done)
        events = [torch.cuda.Event(enable_timing=True) for _ in range(chunk + 1)]
        if hold:
            torch.cuda._sleep(int(chunk * HOLD_US_PER_OP * cycles_per_us))
        op()  # untimed: lines the ranks up
        events[0].record()
        for k in range(chunk):
            op()
            events[k + 1].record()
        torch.cuda.synchronize()
        samples += [events[k].elapsed_time(events[k + 1]) for k in range(chunk)]
        done += chunk
    return samples


def worker(rank, world, args, port):
    if port is not None:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(port))
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    try:
        dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    except TypeError:  # torch before 2.3 has no device_id
        dist.init_process_group("nccl", rank=rank, world_size=world)
    n = dist.get_world_size()
    cycles_per_us = torch.cuda.get_device_properties(dev).clock_rate / 1e3 if hasattr(
        torch.cuda.get_device_properties(dev), "clock_rate") else 1980.0
    dtype = DTYPES[args.dtype]
    rows = []
    for coll in args.collectives.split(","):
        for size in sizes(parse_size(args.min_bytes), parse_size(args.max_bytes), args.step_factor):
            op, nbytes = make_op(coll, size, dtype, n, rank, dev)
            if op is None:
                continue
            mine = time_op(op, args.iters, args.warmup, not args.no_hold, cycles_per_us)
            gathered = [None] * n
            dist.all_gather_object(gathered, mine)
            if rank == 0:
                pooled = sorted(x for g in gathered for x in g)
                p50 = percentile(pooled, 50)
                algbw = nbytes / (p50 * 1e-3) / 1e9
                rows.append({"collective": coll, "size_bytes": size, "bytes": nbytes, "dtype": args.dtype,
                             "ranks": n, "in_place": coll == "allreduce", "p50_ms": p50,
                             "p99_ms": percentile(pooled, 99), "max_ms": pooled[-1],
                             "mean_ms": statistics.fmean(pooled), "algbw_gbps": algbw,
                             "busbw_gbps": algbw * busbw_factor(coll, n)})
                r = rows[-1]
                print(f"{coll:>13} {size:>12} {r['p50_ms'] * 1e3:10.2f} us {r['p99_ms'] * 1e3:10.2f} us "
                      f"{r['algbw_gbps']:8.2f} {r['busbw_gbps']:8.2f} GB/s", flush=True)
    if rank == 0:
        doc = {"tool": "torch_nccl_bench", "torch": torch.__version__,
               "nccl": ".".join(map(str, torch.cuda.nccl.version())), "ranks": n,
               "gpu": torch.cuda.get_device_name(dev), "hold": not args.no_hold,
               "timing": "CUDA events per operation on every rank; p50/p99 over iterations x ranks",
               "points": rows}
        if args.json:
            with open(args.json + ".tmp", "w") as f:
                json.dump(doc, f, indent=2)
            os.replace(args.json + ".tmp", args.json)
    dist.barrier()
    dist.destroy_process_group()


NOT_COMPILED = ("torch.compile: not applied: the time is the NCCL kernel's, which compiling the Python around the "
                "call does not change; perflab.bench: not used: a collective spans every rank's stream, timed here as "
                "perflab comm times it")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--collectives", default="alltoall,allreduce",
                    help="comma list of alltoall, allreduce, allgather, reducescatter")
    ap.add_argument("-b", "--min-bytes", default="1m")
    ap.add_argument("-e", "--max-bytes", default="1g")
    ap.add_argument("-f", "--step-factor", type=float, default=2.0)
    ap.add_argument("-n", "--iters", type=int, default=100)
    ap.add_argument("-w", "--warmup", type=int, default=10)
    ap.add_argument("-d", "--dtype", default="fp32", choices=sorted(DTYPES))
    ap.add_argument("--gpus", type=int, default=0, help="processes to spawn (default: every GPU)")
    ap.add_argument("--no-hold", action="store_true", help="do not hold the stream while enqueueing")
    ap.add_argument("--json", help="write the results here")
    print(NOT_COMPILED, file=sys.stderr)
    args = ap.parse_args()
    if "RANK" in os.environ:  # under torchrun
        worker(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), args, None)
        return
    world = args.gpus or torch.cuda.device_count()
    if world < 1:
        sys.exit("torch_nccl_bench: no GPU")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(world, args, port), nprocs=world, join=True)


if __name__ == "__main__":
    main()
