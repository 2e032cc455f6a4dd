#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""PyTorch side of the pipeline benchmark: a CIFAR ResNet split into two stages, one per process,
with micro-batches sent between them by gloo isend/recv (GPipe fill-drain or 1F1B, the same
per-stage programs as hpf's Schedule::gpipe / one_f_one_b), one thread per process, gloo over the
loopback device (docs/reference.md: torch's Pipe runs CPU stages one after the other, so it is no
pipeline here). Measured as benchmarks/parallel_throughput.cpp measures hpf; prints the same
`RESULT key=value ...` line.

  /usr/bin/python3 benchmarks/pytorch_pipeline.py --model resnet20 --stages 2 --micro-batches 4
  /usr/bin/python3 benchmarks/pytorch_pipeline.py --model resnet56 --stages 1             # whole model
  /usr/bin/python3 benchmarks/pytorch_pipeline.py --model resnet20 --stages 2 --micro-batches 4 --check

Stage 0 is the stem and the first --split blocks, stage 1 the other blocks, pooling and fc. By
default the split balances forward MACs (Conv2d/Linear) between the stages like hpf's Balanced<2>
balances its layer costs. --stages 1 trains the whole model in one process, accumulating the
gradients of the micro-batches (M = 1: a plain step). The loss of micro-batch m is its summed
cross-entropy / global batch, so the accumulated gradient is the full batch's. BatchNorm uses each
micro-batch's statistics, as in hpf. --check runs two pipelined SGD steps and compares every
parameter and buffer with the unsplit model trained on the same micro-batches in one process.
"""
import argparse
import copy
import os
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet20", choices=["resnet20", "resnet56"])
    p.add_argument("--stages", type=int, default=2, choices=[1, 2])
    p.add_argument("--micro-batches", type=int, default=1)
    p.add_argument("--schedule", default="gpipe", choices=["gpipe", "1f1b"])
    p.add_argument("--batch", type=int, default=64, help="global mini-batch (default 64)")
    p.add_argument("--split", type=int, default=-1, help="blocks on stage 0 (default: balanced forward MACs)")
    p.add_argument("--steps", type=int, default=0, help="steps per timed block (default resnet20 5, resnet56 3)")
    p.add_argument("--warmup", type=int, default=0, help="untimed steps first (default resnet20 2, resnet56 1)")
    p.add_argument("--repeats", type=int, default=3, help="timed blocks; images/s is the best block")
    p.add_argument("--threads", type=int, default=1, help="threads per process (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--check", action="store_true", help="compare two pipelined steps with the unsplit model")
    return p.parse_args()


ARGS = parse_args()
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # before torch loads the pools
    os.environ[var] = str(ARGS.threads)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_parallel as tp  # noqa: E402
import torch_reference as ref  # noqa: E402
from torch_reference import CifarResNet  # noqa: E402

DEFAULTS = {"resnet20": (5, 2), "resnet56": (3, 1)}  # steps per block, warm-up steps


# --- the model in two stages ------------------------------------------------------------------------
class Stem(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.conv1, self.bn1 = model.conv1, model.bn1

    def forward(self, x):
        return F.relu(self.bn1(self.conv1(x)))


class Head(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.fc = model.fc

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def units(model):
    """The places a stage may begin, as hpf cuts a ResNet: the stem, each block, the head."""
    return [Stem(model)] + list(model.layers) + [Head(model)]


def unit_macs(model):
    """Forward Conv2d/Linear MACs per sample of each unit."""
    parts = units(model)
    totals = [0] * len(parts)
    handles = []
    for i, unit in enumerate(parts):
        for m in unit.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                handles.append(m.register_forward_hook(
                    lambda mod, inp, out, i=i: totals.__setitem__(i, totals[i] + ref.forward_macs_of(mod, out))))
    with torch.no_grad():
        model.eval()
        model(torch.zeros(1, 3, 32, 32))
        model.train()
    for h in handles:
        h.remove()
    return totals


def balanced_split(macs):
    """Blocks on stage 0 that minimise the larger stage's MACs (ties: the larger stage 0, as
    hpf's greedy packing under the smallest cap)."""
    blocks = len(macs) - 2
    best = None
    for k in range(blocks + 1):
        cost = max(sum(macs[:k + 1]), sum(macs[k + 1:]))
        if best is None or cost <= best[0]:
            best = (cost, k)
    return best[1]


def stages_of(model, split):
    return (nn.Sequential(Stem(model), *model.layers[:split]),
            nn.Sequential(*model.layers[split:], Head(model)))


def new_model(args):
    torch.manual_seed(args.seed)
    return CifarResNet(20 if args.model == "resnet20" else 56)


def sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=5e-4)


# --- schedules (hpf/parallel/schedule.hpp's for_each_instruction) ----------------------------------
def program(schedule, stages, stage, micro):
    """[(op, micro-batch)] of one stage: recv_act, fwd, send_act, recv_grad, bwd, send_grad."""
    first, last = stage == 0, stage + 1 == stages
    out = []

    def forward(m):
        out.extend(([] if first else [("recv_act", m)]) + [("fwd", m)] + ([] if last else [("send_act", m)]))

    def backward(m):
        out.extend(([] if last else [("recv_grad", m)]) + [("bwd", m)] + ([] if first else [("send_grad", m)]))

    if schedule == "gpipe":
        for m in range(micro):
            forward(m)
        for m in range(micro):
            backward(m)
        return out
    warmup = min(stages - stage - 1, micro)
    for m in range(warmup):
        forward(m)
    for m in range(warmup, micro):
        forward(m)
        backward(m - warmup)
    for m in range(micro - warmup, micro):
        backward(m)
    return out


class StageRunner:
    """One process's stage: runs its program for a step, then its optimizer. Records the seconds
    spent blocked in receives and in waiting for its sends (the rest of a step is busy)."""

    def __init__(self, args, stage, stages, module, cut_shape, x, y):
        self.args, self.stage, self.stages, self.module = args, stage, stages, module
        self.first, self.last = stage == 0, stage + 1 == stages
        self.program = program(args.schedule, stages, stage, args.micro_batches)
        self.xs = torch.tensor_split(x, args.micro_batches) if x is not None else None
        self.ys = torch.tensor_split(y, args.micro_batches) if y is not None else None
        self.sizes = [len(part) for part in torch.tensor_split(torch.empty(args.batch), args.micro_batches)]
        self.cut_shape = cut_shape
        self.opt = sgd(module.parameters())
        self.waited = 0.0
        self.held = 0  # micro-batches between forward and backward, at most (the schedule's slots)

    def _recv(self, shape, src, tag):
        buffer = torch.empty(shape)
        start = time.perf_counter()
        dist.recv(buffer, src=src, tag=tag)
        self.waited += time.perf_counter() - start
        return buffer

    def step(self):
        self.opt.zero_grad()
        inputs, outputs, grads, sends = {}, {}, {}, []
        loss_sum = 0.0
        live = 0
        for op, m in self.program:
            if op == "recv_act":
                inputs[m] = self._recv((self.sizes[m],) + self.cut_shape, self.stage - 1, 2 * m).requires_grad_()
            elif op == "fwd":
                out = self.module(self.xs[m] if self.first else inputs[m])
                if self.last:
                    out = F.cross_entropy(out, self.ys[m], reduction="sum") / self.args.batch
                    loss_sum += out.item()
                outputs[m] = out
                live += 1
                self.held = max(self.held, live)
            elif op == "send_act":
                sends.append(dist.isend(outputs[m].detach(), self.stage + 1, tag=2 * m))
            elif op == "recv_grad":
                grads[m] = self._recv(outputs[m].shape, self.stage + 1, 2 * m + 1)
            elif op == "bwd":
                outputs.pop(m).backward(None if self.last else grads.pop(m))
                live -= 1
            elif op == "send_grad":
                sends.append(dist.isend(inputs.pop(m).grad, self.stage - 1, tag=2 * m + 1))
        start = time.perf_counter()
        for s in sends:
            s.wait()
        self.waited += time.perf_counter() - start
        self.opt.step()
        return loss_sum


def single_process_step(module, opt, xs, ys, batch):
    """One step of the whole model in one process, micro-batch by micro-batch (forward, backward)."""
    opt.zero_grad()
    loss_sum = 0.0
    for x, y in zip(xs, ys):
        loss = F.cross_entropy(module(x), y, reduction="sum") / batch
        loss.backward()
        loss_sum += loss.item()
    opt.step()
    return loss_sum


def cut_shape_of(stage0):
    """Per-sample shape of stage 0's output (a no-grad evaluation, running statistics untouched)."""
    stage0.eval()
    with torch.no_grad():
        shape = tuple(stage0(torch.zeros(1, 3, 32, 32)).shape[1:])
    stage0.train()
    return shape


# --- runs ----------------------------------------------------------------------------------------
def defaults(args):
    steps, warmup = DEFAULTS[args.model]
    return args.steps or steps, args.warmup or warmup


def result_line(args, world, split, stage_macs, best, rates, first, last, values):
    core, blas_threads = ref.blas_info()
    macs = sum(stage_macs)
    gflop_per_image = 6.0 * macs * 1e-9
    steps, warmup = defaults(args)
    micro = -(-args.batch // args.micro_batches)
    return (f"RESULT framework=pytorch mode=pipeline model={args.model} world={world} stages={args.stages} "
            f"batch={args.batch} micro_batches={args.micro_batches} micro_batch={micro} schedule={args.schedule} "
            f"split_blocks={split} steps={steps} warmup={warmup} repeats={args.repeats} images_per_s={best:.2f} "
            f"ms_per_step={1e3 * args.batch / best:.4f} gflop_per_step={gflop_per_image * args.batch:.5f} "
            f"gflops={best * gflop_per_image:.2f} rank_peak_rss_mib={tp.per_rank(values, 0)} "
            f"rank_base_rss_mib={tp.per_rank(values, 1)} rank_train_peak_rss_mib={tp.per_rank(values, 2)} "
            f"rank_busy_ms={tp.per_rank(values, 3, 2)} rank_slots={tp.per_rank(values, 4, 0)} "
            f"rank_stage_gflop_per_sample={','.join(f'{6e-9 * m:.5f}' for m in stage_macs)} "
            f"blas={core} blas_threads={blas_threads} torch_threads={torch.get_num_threads()} torch={torch.__version__} "
            f"loss_first={first:.5f} loss_last={last:.5f} block_images_per_s={','.join(str(round(r)) for r in rates)}")


def run_single(args):
    """--stages 1: the whole model in this process."""
    ref.setup_threads(args.threads)
    steps, warmup = defaults(args)
    x, y = ref.synthetic_batch(args.batch, args.seed)
    memory = ref.MemoryMarks()
    model = new_model(args)
    opt = sgd(model.parameters())
    xs, ys = torch.tensor_split(x, args.micro_batches), torch.tensor_split(y, args.micro_batches)

    def train_steps(count):
        loss = 0.0
        for _ in range(count):
            loss = single_process_step(model, opt, xs, ys, args.batch)
        return loss

    best, rates, first, last = tp.timed_blocks(train_steps, steps, warmup, args.repeats, args.batch)
    values = [[memory.process_peak(), memory.base, memory.train_peak(), 1e3 * args.batch / best, 1]]
    print(result_line(args, 1, len(model.layers), [sum(unit_macs(model))], best, rates, first, last, values),
          flush=True)


def worker(rank, args, port):
    """--stages 2: stage `rank` in its own process."""
    tp.init_group(rank, 2, port, args.threads)
    steps, warmup = defaults(args)
    x, y = ref.synthetic_batch(args.batch, args.seed)  # each stage keeps only what it reads
    memory = ref.MemoryMarks()
    model = new_model(args)
    reference = copy.deepcopy(model) if args.check and rank == 0 else None
    macs = unit_macs(model)
    split = args.split if args.split >= 0 else balanced_split(macs)
    stage_macs = [sum(macs[:split + 1]), sum(macs[split + 1:])]
    modules = stages_of(model, split)
    runner = StageRunner(args, rank, 2, modules[rank], cut_shape_of(modules[0]), x if rank == 0 else None,
                         y if rank == 1 else None)
    losses = []

    def train_steps(count):
        for _ in range(count):
            losses.append(runner.step())
        return losses[-1]

    if args.check:
        train_steps(2)
        diff = check_against_unsplit(args, rank, model, reference, split, x, y)
        if rank == 0:
            print(f"RESULT framework=pytorch mode=check model={args.model} schedule={args.schedule} "
                  f"micro_batches={args.micro_batches} split_blocks={split} steps=2 max_abs_diff={diff:.3g}", flush=True)
        tp.finish_group()
        sys.stdout.flush()
        os._exit(0)
    train_steps(1)
    if warmup > 1:
        train_steps(warmup - 1)
    blocks = []  # (images/s, busy ms per step) of each timed block
    for _ in range(args.repeats):
        dist.barrier()
        waited, start = runner.waited, time.perf_counter()
        train_steps(steps)
        wall = time.perf_counter() - start
        blocks.append((steps * args.batch / wall, 1e3 * (wall - (runner.waited - waited)) / steps))
    rates = [rate for rate, _ in blocks]
    (best, busy_ms), first, last = max(blocks), losses[0], losses[-1]
    values = tp.gather_values([memory.process_peak(), memory.base, memory.train_peak(), busy_ms, runner.held,
                               first, last])
    if rank == 0:
        # The loss lives on the last stage.
        print(result_line(args, 2, split, stage_macs, best, rates, values[1][5], values[1][6], values), flush=True)
    tp.finish_group()
    sys.stdout.flush()
    os._exit(0)


def check_against_unsplit(args, rank, model, reference, split, x, y):
    """Max |difference| of every parameter and buffer after the pipelined steps, against the
    unsplit model trained on the same micro-batches (rank 0; stage 1's tensors are sent over)."""
    stage1 = {k: v for k, v in model.state_dict().items()
              if k.startswith("fc.") or (k.startswith("layers.") and int(k.split(".")[1]) >= split)}
    if rank == 1:
        for key in sorted(stage1):
            dist.send(stage1[key].contiguous(), 0)
        return 0.0
    for key in sorted(stage1):
        dist.recv(stage1[key], 1)  # state_dict tensors share storage with the model
    opt = sgd(reference.parameters())
    xs, ys = torch.tensor_split(x, args.micro_batches), torch.tensor_split(y, args.micro_batches)
    for _ in range(2):
        single_process_step(reference, opt, xs, ys, args.batch)
    ours, theirs = model.state_dict(), reference.state_dict()
    return max((ours[k].double() - theirs[k].double()).abs().max().item() for k in theirs if theirs[k].numel())


def main():
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    core, _ = ref.blas_info()
    print(f"# torch {torch.__version__}; OpenBLAS kernels: {core}; OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; {ARGS.stages} stage(s), {ARGS.schedule}, "
          f"{ARGS.micro_batches} micro-batches, {ARGS.threads} thread per process", flush=True)
    if ARGS.micro_batches < 1 or ARGS.micro_batches > ARGS.batch:
        print("--micro-batches must be between 1 and --batch", file=sys.stderr)
        return 2
    if ARGS.stages == 1:
        run_single(ARGS)
    else:
        mp.spawn(worker, args=(ARGS, tp.free_port()), nprocs=2, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
