"""The model's tokenizer: TransformerLens' string helpers work on the task's alphabet and agree
with the task's own rendering."""

import torch

from mi_plateau.config import preset
from mi_plateau.model import build_model
from mi_plateau.task import BOS, EOS, SEP, decode, make_eval_set, make_task


def test_to_tokens_to_string_and_to_str_tokens_round_trip():
    cfg = preset("tiny")
    model = build_model(cfg)
    ev = make_eval_set(make_task(cfg.task), cfg.eval)
    for row in ev.tokens[:5]:
        text = decode(row)
        assert model.to_string(row) == text
        assert torch.equal(model.to_tokens(decode(row[1:]))[0], row)  # <BOS> prepended by TransformerLens
        assert model.to_str_tokens(row)[0] == "<BOS>" and len(model.to_str_tokens(row)) == len(row)
    assert model.to_tokens("ab|<EOS>", prepend_bos=False)[0].tolist() == [4, 5, SEP, EOS]
    assert model.to_tokens("a")[0].tolist() == [BOS, 4]
    logits = model(model.to_tokens("ab|"))
    assert logits.shape == (1, 4, model.cfg.d_vocab)
