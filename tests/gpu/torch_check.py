"""One rank of torch.distributed on the nccl backend, for the GPU checks (scripts/gpu-check.sh).

  python3 torch_check.py calls   all_reduce, broadcast, barrier, all_gather; exits normally
  python3 torch_check.py held    an all_reduce held on the GPU behind ~SECONDS of spinning, so it
                                 stays enqueued while the recorder's watchdog looks at it
"""
import os
import sys
import time

import torch
import torch.distributed as dist


def main() -> int:
    mode = sys.argv[1] if len(sys.argv) > 1 else "calls"
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dev = torch.device("cuda:0")
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=dev)
    x = torch.ones(1024, device=dev)
    if mode == "calls":
        dist.all_reduce(x)
        dist.broadcast(x, 0)
        dist.barrier()
        out = [torch.empty_like(x)]
        dist.all_gather(out, x)
        torch.cuda.synchronize()
    elif mode == "held":
        seconds = float(os.environ.get("HOLD_SECONDS", "6"))
        # torch.cuda._sleep spins the current stream for a number of GPU cycles (~1.98 GHz).
        torch.cuda._sleep(int(seconds * 1.98e9))
        dist.all_reduce(x)  # ProcessGroupNCCL's stream waits for the current one
        t0 = time.time()
        torch.cuda.synchronize()
        print(f"torch_check: held all_reduce completed after {time.time() - t0:.1f} s", flush=True)
    else:
        print(f"torch_check: unknown mode {mode!r} (calls|held)", file=sys.stderr)
        return 2
    dist.destroy_process_group()
    print(f"torch_check: {mode} done; torch {torch.__version__}, nccl {torch.cuda.nccl.version()}",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
