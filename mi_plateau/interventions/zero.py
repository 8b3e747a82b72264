"""Zero ablation of a head (the paper's, Table 9): its ``hook_z`` set to 0."""

from .registry import HeadAblation, register


def zero_head(z, hook, *, head, ctx=None, group=None):
    """``blocks.{l}.attn.hook_z`` of ``head`` set to 0 at every position: the head adds nothing
    to the residual stream (the layer's b_O, shared by its heads, stays)."""
    z[:, :, head] = 0.0
    return z


def zero_packed(z, *, ctx, positions, group):
    """0 at every node."""
    return z.new_zeros(z.shape)


ZERO = register(HeadAblation("zero", zero_head, zero_packed, legend="hook_z zeroed at every position"))
