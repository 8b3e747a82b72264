"""``mi-plateau bench``: the toolkit's training step and analysis passes against plain references.

Four measurements, side by side in one process, candidates alternated (ABBA order, so load
that drifts during the run falls on every candidate alike):

1. **Training step.** The trainer's step (``train.loop._train_loop``: sample, the
   ``model.training_forward`` of ``train.impl`` on ``tokens[:, :-1]``, cross-entropy over the
   target positions, backward, ``make_optimizer``'s AdamW) for ``standard`` (the default),
   ``bridge`` and the opt-in ``fast`` (and ``+compile``), against ``PlainTransformer``, the same
   architecture written as a small ``nn.Module`` with the same optimiser. Throughput is put
   against a measured fp32 matmul peak. FLOPs per step (nominal, the same for every row)::

       6 * N_mm * B * P  +  3 * n_layers * B * 4 * P^2 * d_model

   ``N_mm`` is the number of weights that take part in matmuls (attention, MLP, unembedding; the
   embeddings are lookups), ``B * P`` the tokens of a step (P = seq_len - 1), the second term the
   attention products QK^T and pattern @ V over the full P x P square; x3 for forward + backward.
   Every candidate's first steps' loss curve is checked against the default path.
2. **Analysis passes** at one checkpoint: ``checkpoint_passes`` (batched, functional forward)
   against ``loop_passes``, the straightforward TransformerLens version (``run_with_cache`` for
   the patterns, one ``run_with_hooks`` per head and input for the ablations, one per layer for
   the patching), both on the paper evaluation set. Their numbers are compared too, and each
   pass is timed on its own (``checkpoint_passes(timings=...)``).
3. **Checkpoint overhead**: ``metrics.evaluate`` and the files of one checkpoint, against the
   training steps between two checkpoints (50, and 25 during the transition).
4. **End to end** (not with ``--quick``): the training wall time recorded by the finished run
   ``checkpoints/paper_K10_nb1000_s0`` and the time of ``analyze_run`` over it (into a temp dir);
   and the toolkit's step at 1 thread against one thread per core (oversubscription check).

Nothing is written outside temporary folders. See docs/performance.md for results.
"""

from .candidates import make_candidate
from .reference import PlainBlock, PlainTransformer, loop_passes
from .runner import FULL_CANDIDATES, QUICK_CANDIDATES, run_benchmarks, to_markdown
from .sections import E2E_RUN, bench_end_to_end, bench_overhead, bench_passes, bench_threads, bench_train
from .timing import alternate, machine, matmul_peak_gflops, train_step_flops

__all__ = [
    "E2E_RUN",
    "FULL_CANDIDATES",
    "QUICK_CANDIDATES",
    "PlainBlock",
    "PlainTransformer",
    "alternate",
    "bench_end_to_end",
    "bench_overhead",
    "bench_passes",
    "bench_threads",
    "bench_train",
    "loop_passes",
    "machine",
    "make_candidate",
    "matmul_peak_gflops",
    "run_benchmarks",
    "to_markdown",
    "train_step_flops",
]
