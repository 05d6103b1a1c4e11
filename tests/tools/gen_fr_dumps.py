#!/usr/bin/python3
"""Writes PyTorch Flight Recorder dumps (one file per rank, nccl_trace_rank_<rank>) for one
scenario, the way ProcessGroupNCCL lays them out (docs/analyzer.md, "From PyTorch Flight Recorder
dumps"): pickle protocol 2 by default, or the debug server's JSON form with --json.

    gen_fr_dumps.py SCENARIO OUT_DIR [--ranks N] [--entries N] [--json] [--protocol P]

Scenarios: healthy, gated (rank 0 issues an extra broadcast mid-stream), size_mismatch and
dtype_mismatch (on rank 0), p2p_ring (a clean send/recv ring), p2p_skip (rank 1 skips its last
send of the ring, then waits with the others for rank 2 in an all-reduce), coalesced
(coalesced groups, all complete), missing_rank (rank 2 left no dump), multi_pg (a size
mismatch on rank 3 in a 2-rank group), ring_wrap (rings of different sizes that wrapped, then the gated broadcast), malicious
(rank 0's file is a pickle that would run `touch OUT/pwned` if unpickled by Python; it is written
here, never loaded).
Standard library only: Debian's python3 runs it without PyTorch."""

import argparse
import json
import os
import pickle
import sys

BASE_NS = 1_700_000_000_000_000_000
LIB = [
    {"name": "wrapper", "filename": "/usr/lib/python3/dist-packages/torch/distributed/c10d_logger.py", "line": 83},
]


def frames(op, user):
    """Innermost first: torch's wrapper of the op, then the user's call chain."""
    own = {"name": op, "filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py",
           "line": 2501}
    return [own] + LIB + user + [{"name": "main", "filename": "/job/train.py", "line": 120},
                                  {"name": "<module>", "filename": "/job/train.py", "line": 130}]


TRAIN = [{"name": "train_step", "filename": "/job/train.py", "line": 42}]
CKPT = [{"name": "save_checkpoint", "filename": "/job/train.py", "line": 77}]


class Rank:
    def __init__(self, rank):
        self.rank = rank
        self.entries = []
        self.seq = {}   # pg -> collective_seq_id
        self.p2p = {}   # pg -> p2p_seq_id

    def op(self, pg, name, state, numel=1024, dtype="Float", user=TRAIN, p2p=False, bump=True,
           py_op="all_reduce"):
        if bump:
            self.seq[pg] = self.seq.get(pg, 0) + 1
        if p2p:
            self.p2p[pg] = self.p2p.get(pg, 0) + 1
        rid = len(self.entries)
        t = BASE_NS + rid * 1_000_000
        self.entries.append({
            "frames": frames(py_op, user),
            "record_id": rid,
            "pg_id": int(pg),
            "process_group": (pg, "default_pg" if pg == "0" else "group" + pg),
            "collective_seq_id": self.seq.get(pg, 0),
            "p2p_seq_id": self.p2p.get(pg, 0),
            "op_id": rid + 1,
            "profiling_name": name,
            "time_created_ns": t,
            "input_sizes": [[numel]],
            "input_dtypes": [dtype],
            "output_sizes": [[numel]],
            "output_dtypes": [dtype],
            "state": state,
            "time_discovered_started_ns": t + 1000 if state != "scheduled" else None,
            "time_discovered_completed_ns": t + 5000 if state == "completed" else None,
            "retired": state == "completed",
            "timeout_ms": 600000,
            "is_p2p": p2p,
        })


def all_reduces(ranks, count, pg="0"):
    for r in ranks:
        for _ in range(count):
            r.op(pg, "nccl:all_reduce", "completed")


def hang_tail(r, pg="0", numel=1024, dtype="Float"):
    """The op every rank waits in, then the next one queued behind it."""
    r.op(pg, "nccl:all_reduce", "started", numel=numel, dtype=dtype)
    r.op(pg, "nccl:all_reduce", "scheduled")


def scenario(name, n, entries):
    ranks = [Rank(i) for i in range(n)]
    groups = {"0": list(range(n))}
    if name == "healthy":
        all_reduces(ranks, entries)
    elif name in ("gated", "ring_wrap"):
        all_reduces(ranks, 60 if name == "ring_wrap" else 10)
        ranks[0].op("0", "nccl:broadcast", "started", user=CKPT, py_op="broadcast")
        ranks[0].op("0", "nccl:all_reduce", "scheduled")
        for r in ranks[1:]:
            hang_tail(r)
        if name == "ring_wrap":  # each ring kept its newest 20 + 3 * rank entries
            for r in ranks:
                r.entries = r.entries[-(20 + 3 * r.rank):]
    elif name in ("size_mismatch", "dtype_mismatch"):
        all_reduces(ranks, 10)
        for r in ranks:
            bad = r.rank == 0
            hang_tail(r, numel=2048 if bad and name == "size_mismatch" else 1024,
                      dtype="Half" if bad and name == "dtype_mismatch" else "Float")
    elif name in ("p2p_ring", "p2p_skip"):
        for step in range(5):
            for r in ranks:
                nxt, prv = (r.rank + 1) % n, (r.rank - 1) % n
                last = name == "p2p_skip" and step == 4
                state = "started" if last and r.rank == 2 else "completed"
                if not (last and r.rank == 1):  # rank 1 skips its last send
                    r.op("0", f"nccl:send {r.rank}->{nxt}", "completed", p2p=True, bump=False,
                         py_op="send")
                r.op("0", f"nccl:recv {r.rank}<-{prv}", state, p2p=True, bump=False, py_op="recv")
        if name == "p2p_ring":
            all_reduces(ranks, 2)
        else:  # rank 2 waits for the send; the others wait for rank 2 in the next all-reduce
            for r in ranks:
                if r.rank != 2:
                    r.op("0", "nccl:all_reduce", "started")
    elif name == "coalesced":
        for _ in range(4):
            for r in ranks:
                r.seq["0"] = r.seq.get("0", 0) + 1  # startCoalescing takes one seq for the group
                for numel in (1024, 2048, 4096):
                    r.op("0", "nccl:all_reduce", "completed", numel=numel, bump=False)
                r.op("0", "nccl:coalesced", "completed", bump=False, py_op="_coalescing_manager")
        all_reduces(ranks, 2)
    elif name == "missing_rank":
        all_reduces(ranks, 10)
        for r in ranks:
            hang_tail(r)
        ranks = [r for r in ranks if r.rank != 2]
    elif name == "multi_pg":
        groups.update({"1": [0, 1], "2": [2, 3]})
        all_reduces(ranks, 5)
        for r in ranks:
            sub = "1" if r.rank < 2 else "2"
            for _ in range(3):
                r.op(sub, "nccl:all_gather", "completed", py_op="all_gather")
            r.op(sub, "nccl:all_gather", "started" if sub == "2" else "completed",
                 numel=2048 if r.rank == 3 else 1024, py_op="all_gather")
    else:
        sys.exit(f"gen_fr_dumps.py: unknown scenario {name}")
    return ranks, groups


def dump_of(r, groups, as_json):
    pg_config = {pg: {"name": pg, "desc": "default_pg" if pg == "0" else "group" + pg,
                      "ranks": str(members)}
                 for pg, members in groups.items() if r.rank in members}
    pg_status = {pg: {"last_enqueued_collective": seq, "last_started_collective": seq,
                      "last_completed_collective": seq - 1} for pg, seq in r.seq.items()}
    d = {"version": "2.10", "comm_lib_version": "2.21.5", "pg_config": pg_config,
         "pg_status": pg_status, "entries": r.entries}
    if not as_json:
        return d
    # The debug server's form: no frames, strings in pg_status, lists for tuples, 0 for null.
    d["pg_status"] = {pg: {k: str(v) for k, v in s.items()} for pg, s in pg_status.items()}
    d["entries"] = [{k: (0 if v is None else list(v) if isinstance(v, tuple) else v)
                     for k, v in e.items() if k != "frames"} for e in r.entries]
    if not d["entries"]:
        del d["entries"]
    return d


class Malicious:
    """Pickles as GLOBAL posix.system + REDUCE: what a crafted dump would hold."""

    def __init__(self, out):
        self.out = out

    def __reduce__(self):
        return (os.system, (f"touch {self.out}/pwned",))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scenario")
    p.add_argument("out")
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--entries", type=int, default=20, help="all-reduces per rank (healthy)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--protocol", type=int, default=2)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.scenario == "malicious":
        with open(os.path.join(a.out, "nccl_trace_rank_0"), "wb") as f:
            pickle.dump(Malicious(a.out), f, protocol=a.protocol)
        return
    ranks, groups = scenario(a.scenario, a.ranks, a.entries)
    for r in ranks:
        d = dump_of(r, groups, a.json)
        path = os.path.join(a.out, f"nccl_trace_rank_{r.rank}")
        with open(path, "w" if a.json else "wb") as f:
            if a.json:
                json.dump(d, f)
            else:
                pickle.dump(d, f, protocol=a.protocol)


if __name__ == "__main__":
    main()
