"""What both sweep backends report as their units of work end: a bar of finished runs on
standard error and the caller's ``on_done``."""

from __future__ import annotations

import sys
from collections.abc import Callable


class Progress:
    """The runs a backend has finished: ``done(n)`` after a unit of ``n`` runs ends (advances the
    bar, then calls ``on_done``); ``close()`` once all have. No bar without ``progress`` or runs."""

    def __init__(self, total: int, progress: bool, on_done: Callable[[], None] | None = None):
        self.on_done = on_done
        self.bar = None
        if progress and total:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc="runs", unit="run", file=sys.stderr, dynamic_ncols=True)

    def done(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)
        if self.on_done is not None:
            self.on_done()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
