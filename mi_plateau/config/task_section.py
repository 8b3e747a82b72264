"""The task section of the configuration (``TaskConfig``: the K-fold ambiguous lookup task, its
fields declared with ``setting`` as every section's are) and the token layout a task implies
(``layout_for``). ``schema`` assembles it with the other sections into ``RunConfig``."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .layout import LEN_A, LEN_B, N_CHARS, Layout
from .settings import NON_NEGATIVE, POSITIVE, SEED, Bounds, setting

A_TARGET_DIRECTIONS = ("backward", "b_a")
SELECTOR_DIRECTIONS = ("backward", "az_b")
MAX_NB = 20000


@dataclass(frozen=True)
class TaskConfig:
    """The K-fold ambiguous lookup task (docs/design.md)."""

    K: int = setting(
        10,
        help="targets per base string (= number of selectors), 2..36",
        bounds=Bounds(ge=2, le=N_CHARS),
        note="ambiguity needs 2; the K targets of a group need distinct first characters",
        alias="K",
        flag="--K",
    )
    n_b: int = setting(1000, help="number of base strings (groups)", bounds=POSITIVE, alias="n_b", flag="--n-b")
    len_z: int = setting(
        2, help="selector length (1-4 in Table 7)", bounds=Bounds(ge=1, le=8), alias="len_z", flag="--len-z"
    )
    direction: str = setting(
        "backward",
        help="backward (B,z)->A | forward A->B | az_b (A,z)->B | b_a B->A",
        choices=("backward", "forward", "az_b", "b_a"),
        alias="direction",
        flag="--direction",
    )
    label_noise: float = setting(
        0.0,
        help="probability a training target is another A of its group",
        bounds=Bounds(ge=0, lt=1),
        alias="label_noise",
        flag="--label-noise",
    )
    label_noise_mode: str = setting(
        "fixed",
        choices=("fixed", "per_draw"),
        help="fixed: a fraction label_noise of the examples corrupted once, for the whole run (the original's); "
        "per_draw: each training draw corrupted with probability label_noise (ours; runs older than this setting "
        "trained that way: checkpoints.LEGACY_DEFAULTS)",
    )
    selector_groups: int = setting(
        0,
        bounds=NON_NEGATIVE,
        note="0 = one global selector set",
        help="the gradient-cancellation control (Table 12): 0 = one global selector set shared by every group; "
        "G > 0 = G selector sets of K selectors each, all G*K strings distinct, group g using set g mod G "
        "(so the groups that share a set number about n_b / G)",
    )
    distinct_first: bool = setting(
        True,
        help="the K targets of a group start with K different characters (ours and the K sweep's); false: "
        "first characters drawn freely, as the original's direction experiment (Table 2) drew them",
    )
    data_seed: int = setting(0, help="seed of the task's strings", bounds=SEED)

    @property
    def D(self) -> int:
        return self.n_b * self.K

    @property
    def log_K(self) -> float:
        return math.log(self.K)

    @property
    def has_selector(self) -> bool:
        return self.direction in SELECTOR_DIRECTIONS

    @property
    def targets_A(self) -> bool:
        return self.direction in A_TARGET_DIRECTIONS


def layout_for(task: TaskConfig) -> Layout:
    prompts = {
        "backward": (("B", LEN_B), ("z", task.len_z)),
        "forward": (("A", LEN_A),),
        "az_b": (("A", LEN_A), ("z", task.len_z)),
        "b_a": (("B", LEN_B),),
    }[task.direction]
    target_len = LEN_A if task.targets_A else LEN_B
    segments, pos = [], 1  # position 0 is BOS
    for name, length in prompts:
        segments.append((name, pos, length))
        pos += length + 1  # each prompt segment is followed by SEP
    return Layout(seq_len=pos + target_len + 1, segments=tuple(segments), target_start=pos, target_len=target_len)
