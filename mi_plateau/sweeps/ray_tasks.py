"""The ``ray`` sweep backend: Ray core tasks (``num_cpus`` = ``options.threads``, default 1;
``max_retries=retries``) that call the same train function, on the cluster at ``address`` or on
a local Ray instance with ``jobs`` x ``threads`` CPUs. The run folders must be on a filesystem
every worker sees."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ..checkpoints import RunError
from ..config import RunConfig, RunOptions
from .progress import Progress
from .schedule import status, work_units


def _ray_train(items: list[tuple[dict, str]], device: str = "auto", threads: int = 1) -> list[str]:
    """A Ray task: the same resumable train function (one run) or the batched trainer, ``threads``
    threads."""
    options = RunOptions(device=device, threads=threads)  # the trainers set the threads
    pairs = [(RunConfig.from_dict(c), out) for c, out in items]
    if len(pairs) == 1:
        from ..train import train  # here, not at the top: torch, in the Ray worker only (not the driver)

        train(pairs[0][0], pairs[0][1], resume=True, progress=False, options=options)
    else:
        from ..train.batched import train_batched  # here, not at the top: as above

        train_batched(pairs, resume=True, progress=False, options=options)
    return [out for _, out in items]


def train_ray(
    runs: Sequence[tuple[Path, RunConfig]],
    options: RunOptions = RunOptions(),
    *,
    retries: int = 1,
    order: str = "longest_first",
    on_done: Callable[[], None] | None = None,
) -> dict[str, str]:
    """Train the unfinished runs as Ray tasks (one per run, or per batch with
    ``options.batch_runs`` > 1) on ``options.device``, on the cluster at ``options.address`` or
    on a local Ray instance holding ``options.processes()`` tasks at once (each asks for
    ``options.threads`` CPUs, default 1); returns {run folder: error} for the
    failures."""
    address, device, threads = options.address, options.device, options.threads or 1
    try:
        import ray
    except ImportError:
        raise RunError("the ray backend needs Ray: pip install 'mi-plateau[ray]'") from None
    units = work_units(runs, options.batch_runs, order)
    started = not ray.is_initialized()
    if started:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            # jobs tasks at once, each holding its threads' CPUs (the local pool's processes)
            ray.init(num_cpus=options.processes() * threads, include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(num_cpus=threads, max_retries=retries)(_ray_train)
        refs = {task.remote([(c.to_dict(), str(p.resolve())) for p, c in u], device, threads): u for u in units}
        errors: dict[str, str] = {}
        tally = Progress(sum(len(u) for u in units), options.progress, on_done)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                ray.get(done[0])
            except Exception as e:  # the task's own error, or a worker lost more often than max_retries
                msg = " ".join(str(getattr(e, "cause", None) or e).split())[-300:]
                errors.update({str(p): msg for p, _ in refs[done[0]] if status(p) != "finished"})
            tally.done(len(refs[done[0]]))
        tally.close()
        return errors
    finally:
        if started:
            ray.shutdown()
