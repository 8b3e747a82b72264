"""Mean ablation of a head: its ``hook_z`` set to its mean over the evaluation set."""

from .registry import HeadAblation, register


def mean_context(z, K):
    """``hook_z``'s mean over the evaluation set's rows at each position [pos, head, d_head]."""
    return z.mean(0)


def mean_head(z, hook, *, head, ctx, group=None):
    """``blocks.{l}.attn.hook_z`` of ``head`` set, at each position, to its mean over the
    evaluation set's rows there (``ctx``): the head writes what it writes on average, the
    same for every input."""
    z[:, :, head] = ctx[:, head]
    return z


def mean_packed(z, *, ctx, positions, group):
    """The mean at the node's position."""
    return ctx[positions]


MEAN = register(
    HeadAblation(
        "mean",
        mean_head,
        mean_packed,
        legend="hook_z set to its mean over the evaluation set at each position",
        context=mean_context,
    )
)
