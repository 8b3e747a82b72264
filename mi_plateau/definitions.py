"""The two families of measurements, by name: which column each quantity reads (docs/analyses.md).

Every artifact named after the paper takes a ``definition`` ("paper" or "first_token") and reads
its columns through ``DEFINITIONS[definition]``, so one code path serves both families:

=============  ==========================================  ==========================================
quantity       paper                                        first_token
=============  ==========================================  ==========================================
loss           L_seq: whole target string + EOS, softmax    Lc: A1, softmax over the K candidate
               over the group's K candidate strings         first characters
accuracy       candidate accuracy (argmax over the K        exact match (A1..A4 all the teacher-
               strings is the target)                       forced argmax)
swap gap       L_seq(z replaced) - L_seq                    Lc(z replaced) - Lc
ablation       Delta L: full-vocabulary mean cross-entropy  Delta Lc
               over A1..A4 and EOS, ablated - clean
Table 9 Post   2 tau                                        2 tau
=============  ==========================================  ==========================================

Torch-free: summaries and tables import it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Definition:
    name: str
    loss: str  # checkpoint column of the loss whose tau and plateau the family reports
    acc: str  # per-group accuracy column (group rows) and its checkpoint mean
    acc_mean: str
    ge80: str
    eq100: str
    swap_gap: str  # checkpoint column
    shuffle_gap: str
    ablation: str  # head column ranked in Table 9
    group_loss: str  # group-row column of the per-group loss (Figure 3b)
    label: str


DEFINITIONS = {
    "paper": Definition(
        "paper",
        "L_seq",
        "cand_acc",
        "cand_acc",
        "cand_groups_ge80",
        "cand_groups_100",
        "swap_gap_seq",
        "shuffle_gap_seq",
        "dL",
        "L_seq",
        "paper (sequence candidate loss L_seq, candidate accuracy, Delta L over all target positions)",
    ),
    "first_token": Definition(
        "first_token",
        "Lc",
        "acc",
        "acc_mean",
        "groups_ge80",
        "groups_100",
        "swap_gap",
        "shuffle_gap",
        "dLc",
        "Lc",
        "first token (candidate loss Lc of A1, exact-match accuracy, Delta Lc)",
    ),
}
FAMILIES = tuple(DEFINITIONS)


# the status a recipe table shows for a recorded run whose curves its log does not keep
NO_CURVES = "no curves"


def definition(name: str) -> Definition:
    if name not in DEFINITIONS:
        raise ValueError(f"definition {name!r}: choose one of {', '.join(DEFINITIONS)}")
    return DEFINITIONS[name]
