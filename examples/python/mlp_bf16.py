#!/usr/bin/env python3
"""Training steps of a two-layer perceptron with bf16 weights, written as .pg kernels
(mlp_bf16.pg: GEMMs, ReLU, softmax cross-entropy, gradients, SGD) and launched by ptxgate on
PyTorch tensors in place. The first step runs launch by launch; the step is then recorded as a
CUDA graph (``with graph:``), and every later step is one replay, after the learning rate of the
two update nodes was changed with a validated graph update. After each step the loss, the
gradients and the new weights are checked against PyTorch autograd on the same data, starting
from the same weights. Exit 0 when every step agrees, 1 otherwise, 77 without a GPU.

    python3 examples/python/mlp_bf16.py [--steps 10] [--batch 256] [--inputs 256] [--hidden 512] [--classes 16]
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def blocks(n):
    return (n + 255) // 256


class Mlp:
    """The network's tensors and its kernels; ``step(rate)`` launches one training step (nine
    kernels) and, inside ``with graph:``, records them instead, returning the update nodes."""

    def __init__(self, rt, torch, batch, inputs, hidden, classes, seed=0):
        import ptxgate  # noqa: F401 - the runtime's module

        self.torch = torch
        self.B, self.D, self.H, self.C = batch, inputs, hidden, classes
        kernels = os.path.join(HERE, "mlp_bf16.pg")
        self.k = {name: rt.compile(kernels, name) for name in
                  ("gemm_nt", "relu_bf16", "softmax_xent", "grad_weight", "grad_hidden", "sgd_bf16")}
        g = torch.Generator(device="cuda").manual_seed(seed)
        cuda = dict(device="cuda")
        self.x = torch.randn(batch, inputs, generator=g, **cuda).to(torch.bfloat16)
        self.labels = torch.randint(0, classes, (batch,), generator=g, **cuda, dtype=torch.int32)
        self.w1 = (torch.randn(hidden, inputs, generator=g, **cuda) / inputs ** 0.5).to(torch.bfloat16)
        self.w2 = (torch.randn(classes, hidden, generator=g, **cuda) / hidden ** 0.5).to(torch.bfloat16)
        f32 = dict(device="cuda", dtype=torch.float32)
        self.pre = torch.empty(batch, hidden, **f32)
        self.h = torch.empty(batch, hidden, device="cuda", dtype=torch.bfloat16)
        self.logits = torch.empty(batch, classes, **f32)
        self.loss = torch.empty(batch, **f32)
        self.dlogits = torch.empty(batch, classes, **f32)
        self.dw2 = torch.empty(classes, hidden, **f32)
        self.dpre = torch.empty(batch, hidden, **f32)
        self.dw1 = torch.empty(hidden, inputs, **f32)

    def step(self, rate):
        k, B, D, H, C = self.k, self.B, self.D, self.H, self.C
        k["gemm_nt"][blocks(B * H), 256](self.pre, self.x, self.w1, B, H, D)
        k["relu_bf16"][blocks(B * H), 256](self.h, self.pre, B * H)
        k["gemm_nt"][blocks(B * C), 256](self.logits, self.h, self.w2, B, C, H)
        k["softmax_xent"][blocks(B), 256](self.loss, self.dlogits, self.logits, self.labels, B, C)
        k["grad_weight"][blocks(C * H), 256](self.dw2, self.dlogits, self.h, B, C, H)
        k["grad_hidden"][blocks(B * H), 256](self.dpre, self.dlogits, self.w2, self.pre, B, C, H)
        k["grad_weight"][blocks(H * D), 256](self.dw1, self.dpre, self.x, B, H, D)
        n1 = k["sgd_bf16"][blocks(H * D), 256](self.w1, self.dw1, rate, H * D)
        n2 = k["sgd_bf16"][blocks(C * H), 256](self.w2, self.dw2, rate, C * H)
        return n1, n2

    def update_rate(self, exec_, nodes, rate):
        """The graph's two update launches with a new learning rate (validated before the driver)."""
        D, H, C = self.D, self.H, self.C
        exec_.update(nodes[0], blocks(H * D), [self.w1, self.dw1, rate, H * D], block=256)
        exec_.update(nodes[1], blocks(C * H), [self.w2, self.dw2, rate, C * H], block=256)


def reference(torch, net, w1, w2, rate):
    """One step of the same network in PyTorch autograd from weights ``w1``, ``w2`` (bf16):
    (loss, dW1, dW2, new w1, new w2)."""
    import torch.nn.functional as F

    a = w1.float().requires_grad_()
    b = w2.float().requires_grad_()
    pre = net.x.float() @ a.T
    h = torch.relu(pre).to(torch.bfloat16).float()  # the bf16 activations the second GEMM reads
    logits = h @ b.T
    loss = F.cross_entropy(logits, net.labels.long())
    loss.backward()
    new1 = (w1.float() - rate * a.grad).to(torch.bfloat16)
    new2 = (w2.float() - rate * b.grad).to(torch.bfloat16)
    return loss.item(), a.grad, b.grad, new1, new2


def compare(torch, step, ours, ref, before, rate):
    """Checks one step; returns (ok, a line saying how close).

    The loss and the gradients are compared with autograd's within what bf16 activations allow:
    our f32 GEMM and cuBLAS's sum in other orders, so a few hidden activations round to the
    neighbouring bf16 value (2^-8 relative) and every gradient that reads them moves by as much;
    gradients are within 2^-8 of autograd's, relative to their largest element. The SGD update is
    exact: the new weights must equal, bit for bit, PyTorch's bf16(w - rate * g) of our gradients.
    The weights equal to autograd's own update are counted (the rest differ by those rounding
    neighbours)."""
    loss, g1, g2, w1, w2 = ours
    rloss, rg1, rg2, rw1, rw2 = ref
    rel = lambda a, b: float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))  # noqa: E731
    loss_err = abs(loss - rloss) / abs(rloss)
    g_err = max(rel(g1, rg1), rel(g2, rg2))
    update = lambda w, g: (w.float() - rate * g).to(torch.bfloat16)  # noqa: E731
    update_exact = torch.equal(w1, update(before[0], g1)) and torch.equal(w2, update(before[1], g2))
    differing = int((w1 != rw1).sum() + (w2 != rw2).sum())
    total = w1.numel() + w2.numel()
    ok = loss_err < 1e-5 and g_err < 2.0 ** -8 and update_exact
    line = (f"step {step}: loss {loss:.6f} (PyTorch {rloss:.6f}, rel. error {loss_err:.1e}), gradients rel. error "
            f"{g_err:.1e}, update {'exact' if update_exact else 'NOT bf16(w - rate * g)'}, weights equal to "
            f"autograd's update: {total - differing}/{total}")
    return ok, line


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--inputs", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--classes", type=int, default=16)
    ap.add_argument("--rate", type=float, default=0.5)
    ap.add_argument("--decay", type=float, default=0.9, help="the learning rate's factor per step")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("SKIPPED: mlp_bf16: needs PyTorch")
        return 77
    if not torch.cuda.is_available():
        print("SKIPPED: mlp_bf16: no CUDA device")
        return 77
    import ptxgate

    torch.backends.cuda.matmul.allow_tf32 = False  # the reference's GEMMs in f32, as ours
    rt = ptxgate.Runtime()
    net = Mlp(rt, torch, a.batch, a.inputs, a.hidden, a.classes)
    print(f"mlp_bf16: {rt!r}; batch {a.batch}, {a.inputs} -> {a.hidden} -> {a.classes}, {a.steps} steps, "
          f"bf16 weights, kernels of mlp_bf16.pg")
    ok_all = True
    exec_ = nodes = None
    host_us = []
    for step in range(1, a.steps + 1):
        rate = a.rate * a.decay ** (step - 1)
        w1, w2 = net.w1.clone(), net.w2.clone()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        if step == 1:
            net.step(rate)  # launch by launch
            how = "launches"
        else:
            if exec_ is None:
                graph = rt.graph()
                with graph:
                    nodes = net.step(rate)  # recorded, not run
                exec_ = graph.instantiate()
                print(f"mlp_bf16: {graph!r} recorded; replaying it from step 2, the rate updated in nodes {nodes}")
            else:
                net.update_rate(exec_, nodes, rate)
            exec_.replay()
            how = "graph replay"
        host_us.append((time.perf_counter() - t0) * 1e6)
        torch.cuda.synchronize()
        ours = (float(net.loss.mean()), net.dw1.clone(), net.dw2.clone(), net.w1.clone(), net.w2.clone())
        ok, line = compare(torch, step, ours, reference(torch, net, w1, w2, rate), (w1, w2), rate)
        ok_all &= ok
        print(f"  {line} [{how}, host {host_us[-1]:.0f} us]{'' if ok else '  <-- MISMATCH'}")
    print(f"mlp_bf16: graph replays {exec_.replays if exec_ else 0}; "
          f"{'every step agrees with PyTorch autograd' if ok_all else 'MISMATCH with PyTorch autograd'}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
