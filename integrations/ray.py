"""bfcl-safe on Ray (``pip install 'bfcl-safe[ray]'``): episodes in actors and tasks, and
``bfcl-safe evaluate`` scoring on a Ray cluster.

**Episodes** (:class:`~bfcl_safe.checker.play.Episode`) pickle, so they cross Ray's
boundaries as they are: pass one to a task (``ray.put(episode)``), return it from one, or
keep it in an actor. :class:`EpisodeActor` is such an actor, for rollouts that keep an
environment per worker::

    import ray
    from bfcl_safe.integrations.ray import EpisodeActor

    actor = EpisodeActor.remote("multi_turn_base_0", data=None, owner="my-model")
    step = ray.get(actor.step.remote(assistant_message))   # a StepResult
    outcome = ray.get(actor.end_turn.remote())               # a TurnOutcome
    episode = ray.get(actor.episode.remote())                # a copy, to continue anywhere

**Scoring** (:class:`RayPool`): the runner's pool interface (``checker/parallel.py``:
``map(tasks, progress) -> per task, per line, a text or Lost``) on Ray actors, through
Ray's own ``ray.util.ActorPool``. Each actor opens the dataset once (``Dataset.open(data)``:
the same wheel or folder must be readable on every node, or use the cache on each) and
runs :func:`bfcl_safe.checker.scoring.score_batch` on the batches it is given: only text
crosses (JSON contexts and result lines in, line results out), each line scored inside
its own fault boundary as with ``--jobs``. A batch whose actor dies comes back as
:class:`~bfcl_safe.checker.parallel.Lost` for each of its lines (the runner fails those
entries with the resource-limit type); the other batches are not affected. Score files
are byte-identical to a serial run's.

``bfcl-safe evaluate --ray-address ADDRESS`` uses it (``auto`` for the cluster this
machine belongs to; ``local`` starts a Ray instance on this machine), with ``--jobs``
actors. From Python::

    from bfcl_safe.integrations.ray import RayPool, score_tree_on_ray
    run = score_tree_on_ray(result_dir, score_dir, data=None, address="auto", actors=8)
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, cast

from bfcl_safe.integrations import MissingExtra

try:
    import ray
    from ray.exceptions import RayError
    from ray.util import ActorPool
except ImportError:  # pragma: no cover - only without the extra
    raise MissingExtra("ray", "ray") from None

from bfcl_safe.checker.dataset import Dataset
from bfcl_safe.checker.parallel import Lost
from bfcl_safe.interp.errors import BfclSafeError

if TYPE_CHECKING:
    from ray.actor import ActorHandle


class RayUnavailable(BfclSafeError, ConnectionError):
    """Ray could not be started (``address`` ``"local"``/None) or reached at ``address``;
    ``cause`` is the exception Ray raised (its type and first line)."""

    def __init__(self, address: str | None, cause: str):
        self.address = address
        self.cause = cause
        if address in (None, "local"):
            super().__init__(f"cannot start Ray: {cause}")
        else:
            super().__init__(f"cannot connect to Ray at {address[:200]!r}: {cause}")

    def __reduce__(self):
        return (type(self), (self.address, self.cause))


def connect(address: str | None = None, **init_args: Any) -> None:
    """Connect this process to Ray unless it is already: ``address`` ``"auto"`` (the
    cluster this machine belongs to), ``"ray://host:port"``, ``"local"``/None (a new
    local instance). ``init_args`` go to ``ray.init`` (e.g. ``num_cpus``).
    :class:`RayUnavailable` when Ray cannot be reached."""
    if ray.is_initialized():
        return
    try:
        ray.init(address=None if address in (None, "local") else address, **init_args)
    except Exception as exc:  # noqa: BLE001 - Ray raises a bare Exception when its node does not start
        raise RayUnavailable(address, _cause(exc)) from None


def _cause(exc: BaseException) -> str:
    """An exception as one short line: its type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    first = lines[0].strip() if lines else ""
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return text if len(text) <= 300 else text[:300] + "..."


class _Scorer:
    """A scoring actor: the dataset opened once, batches of result lines scored as text."""

    def __init__(self, data: str | None):
        self.dataset = Dataset.open(data)

    def score(self, context: str, lines: Sequence[str]) -> list[str]:
        from bfcl_safe.checker.scoring import score_batch

        return score_batch(self.dataset, context, list(lines))


class RayPool:
    """The runner's pool interface on Ray actors (see the module docstring)."""

    def __init__(self, data: str | Path | None = None, actors: int = 2):
        if type(actors) is not int or actors < 1:
            raise ValueError(f"actors must be a positive int, not {actors!r}")
        remote = ray.remote(num_cpus=1)(_Scorer)
        # (ray types remote() as its ActorProxy, the handle or the class, so that method access checks:
        # what it returns is the handle)
        self.actors = [cast("ActorHandle[_Scorer]", remote.remote(None if data is None else str(data)))
                       for _ in range(actors)]

    def map(self, tasks: Sequence[tuple[str, Sequence[str]]],
            progress: Callable[[int], None] | None = None) -> list[list[str | Lost]]:
        pool = ActorPool(self.actors)
        for context, lines in tasks:
            pool.submit(lambda actor, task: actor.score.remote(task[0], list(task[1])), (context, list(lines)))
        out: list[list[str | Lost]] = []
        for _context, lines in tasks:  # ActorPool.get_next returns results in submission order
            try:
                texts: list[str | Lost] = list(pool.get_next())
            except RayError as exc:
                texts = [Lost(f"ray actor lost ({type(exc).__name__})")] * len(lines)
            if len(texts) != len(lines):
                texts = [Lost("ray actor returned a wrong number of lines")] * len(lines)
            out.append(texts)
            if progress:
                progress(len(lines))
        return out

    def close(self) -> None:
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []


def score_tree_on_ray(result_dir: str | Path, score_dir: str | Path, *, data: str | Path | None = None,
                      address: str | None = None, actors: int = 2, options: Any = None,
                      report: Callable[[str], None] = lambda message: None) -> Any:
    """``runner.score_tree`` with its lines scored by a :class:`RayPool` of ``actors``
    actors (connecting to ``address`` first, see :func:`connect`). The dataset is opened
    here too (``data``), for what the runner does itself (CSV, checks)."""
    from bfcl_safe.checker import runner
    from bfcl_safe.checker.scoring import Options

    connect(address)
    dataset = Dataset.open(None if data is None else str(data))
    pool = RayPool(data, actors)
    try:
        return runner.score_tree(Path(result_dir), Path(score_dir), dataset, options or Options(),
                                 report=report, pool=pool)
    finally:
        pool.close()


class _EpisodeActor:
    """One episode kept in an actor; each method is the play API's."""

    def __init__(self, entry_id: str | None = None, data: str | None = None, owner: str | None = None,
                 episode: Any = None):
        from bfcl_safe.checker.play import ArgumentError, Episode

        if episode is not None and not isinstance(episode, Episode):
            raise ArgumentError("episode", f"episode must be an Episode, not {type(episode).__name__}")
        if data is not None and not isinstance(data, str):
            raise ArgumentError("data", f"data must be a path (str) or None, not {type(data).__name__}")
        if episode is None:
            if entry_id is None:
                raise ArgumentError("entry_id", "an entry id or an episode is needed (both are None)")
            episode = Episode.from_entry(entry_id, Dataset.open(data), owner=owner)
        self._episode = episode

    def messages(self) -> list[dict]:
        return self._episode.messages()

    def tools(self, format: str = "openai") -> list[dict]:
        return self._episode.tools(format=format)

    def step(self, calls: Any) -> Any:
        return self._episode.step(calls)

    def end_turn(self) -> Any:
        return self._episode.end_turn()

    def check_turn(self) -> Any:
        return self._episode.check_turn()

    def done(self) -> bool:
        return self._episode.done

    def result(self) -> list:
        return self._episode.result()

    def episode(self) -> Any:
        """The episode itself (pickled across by Ray: a copy that continues identically)."""
        return self._episode


#: ``EpisodeActor.remote(entry_id, data=None, owner=None)`` or ``EpisodeActor.remote(episode=ep)``.
EpisodeActor = ray.remote(_EpisodeActor)


__all__ = ["EpisodeActor", "RayPool", "RayUnavailable", "connect", "score_tree_on_ray"]
