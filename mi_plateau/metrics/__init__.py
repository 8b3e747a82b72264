"""Measurements on the fixed evaluation set (docs/analyses.md). All losses are in nats.

Two families, both computed at every checkpoint and named in every table:

**paper** (what the paper's tables mean):

- Sequence candidate loss ``L_seq``: for an example (B, z_k), every candidate target string A^j
  of its group (j = 1..K) gets the score s_j = sum of the teacher-forced log-probabilities of
  A^j's four characters and EOS given (B, z_k); ``L_seq = -log softmax_j(s)[k]``. A z-blind
  model that knows the group's K strings scores exactly log K.
- Candidate accuracy ``cand_acc``: argmax_j s_j == k; per group, the fraction of its K examples
  (``cand_groups_ge80``, ``cand_groups_100``: shares of groups at >= 80% and at 100%).

**first_token** (ours; only A1 carries the ambiguity):

- Candidate loss ``Lc``: cross-entropy of the first target token with the softmax restricted
  to the K candidate first characters of the example's group. A z-blind model that spreads its
  mass evenly over the candidates has Lc = log K exactly. The canonical loss of the toolkit.
- First-token loss ``L1``: the same cross-entropy over the whole vocabulary.
- Full target loss: mean next-token cross-entropy over the target tokens and EOS.
- Candidate mass: probability (full softmax) on the group's K candidates; near 1 once P(A1|B)
  is learned, whether or not z is used.
- z-swap gap: Lc with each example's selector replaced by another selector of the set, minus
  clean Lc. Cheap per-checkpoint version: one replacement, selector k -> k+1 mod K.
- Per-group accuracy: fraction of a group's K examples whose target tokens are all predicted
  correctly by teacher-forced argmax.
"""

from .evaluation import (
    ACC_THRESHOLD,
    ACC_TOL,
    accuracy_shares,
    accuracy_stats,
    candidate_losses,
    estimate,
    evaluate,
    evaluate_reference,
    example_correct,
    example_losses,
    first_token_losses,
    first_token_rows,
    group_accuracy,
    group_means,
    group_scores,
    sequence_losses,
    sequence_scores_reference,
    target_loss,
)
from .live import Live, live_subset
from .packed import PackedRun, packed_forward, sequence_scores, string_logprob

__all__ = [
    "ACC_THRESHOLD",
    "ACC_TOL",
    "accuracy_shares",
    "accuracy_stats",
    "candidate_losses",
    "first_token_rows",
    "estimate",
    "evaluate",
    "evaluate_reference",
    "example_correct",
    "example_losses",
    "first_token_losses",
    "group_accuracy",
    "group_means",
    "group_scores",
    "Live",
    "PackedRun",
    "packed_forward",
    "live_subset",
    "sequence_losses",
    "sequence_scores",
    "sequence_scores_reference",
    "string_logprob",
    "target_loss",
]
