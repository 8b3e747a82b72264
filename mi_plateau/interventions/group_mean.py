"""Group-mean ablation of a head: its ``hook_z`` set to its mean over the example's group.

The K examples of a group share B and differ only in the selector. Replaced by its mean over
the group, a head keeps what it computes from B (its output at the positions before the
selector is the group's own, unchanged) and loses what it computes from the selector: dLc under
this ablation is what the head's selector-dependent output is worth. A head that zero or mean
ablation finds important and this one does not carries the group's marginal, not the
conditional on z.
"""

from .registry import HeadAblation, register


def group_mean_context(z, K):
    """``hook_z``'s mean over each group's K rows at each position [group, pos, head, d_head]."""
    return z.unflatten(0, (-1, K)).mean(1)


def group_mean_head(z, hook, *, head, ctx, group):
    """``blocks.{l}.attn.hook_z`` of ``head`` set, at each position, to its mean over the K
    examples of the row's group there (``ctx[group]``): the head writes what it writes for the
    group's B on average over the selectors."""
    z[:, :, head] = ctx[group, :, head]
    return z


def group_mean_packed(z, *, ctx, positions, group):
    """The mean of the pack's group at the node's position."""
    return ctx[group[:, None], positions]


GROUP_MEAN = register(
    HeadAblation(
        "group_mean",
        group_mean_head,
        group_mean_packed,
        legend="hook_z set to its mean over the example's group (same B, every selector) at each position",
        context=group_mean_context,
    )
)
