import torch

from ._adam_base import syncfree_step


class AdamW(torch.optim.AdamW):

    @torch.no_grad()
    def step(self, closure=None, found_inf=None):
        if found_inf is None:
            return super().step(closure=closure)
        return syncfree_step(self, closure, found_inf, use_adamw=True)
