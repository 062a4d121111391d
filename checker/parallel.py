"""Running a per-line function over batches of line texts, in this process or in N forked ones.

The pool interface (what ``checker/runner.py`` uses, and what another pool must offer)::

    pool.map(tasks, progress=None) -> list[list[str | Lost]]

- ``tasks``: a sequence of ``(context, lines)``: ``context`` a text (JSON) shared by the
  batch, ``lines`` the line texts to score;
- the result: per task, per line, the text that ``work(context, line)`` returned, or a
  :class:`Lost` where the worker scoring that line was lost (died, or was given up by
  the last-resort guard): nothing else of the batch is lost with it;
- ``progress(n)`` is called in the calling process as lines finish;
- ``work`` is given when the pool is made: ``functools.partial(scoring.score_text,
  dataset)`` here. Everything that crosses a process boundary is text: no pickles. (In
  this process the runner gives :class:`InProcessPool` ``scoring.score_in_process``,
  the same function without the text form: results are then ``LineResult`` objects.)

Two pools: :class:`InProcessPool` (``--jobs 1``; also where forking is unsafe) calls
``work`` in this process, line by line, and :class:`ForkPool` (``--jobs N``) forks N
children that share the caller's loaded dataset. A remote pool (e.g. Ray, for
``--ray-address``) implements the same ``map``: ship ``context`` and ``lines`` as text to
actors that each opened the dataset once (``Dataset.open(data)``) and run
``bfcl_safe.checker.scoring.score_batch(dataset, context, lines)`` (one text per line);
an actor lost mid-batch yields ``Lost`` for the line it was on (or for the whole batch if
that is not known) — the runner fails such lines with the resource-limit type.

ForkPool, in detail: the parent only supervises. It hands each child one task index at a
time over that child's own pipe; the child writes one frame per line as it finishes it
(``"{task} {line} {length}\\n"`` + UTF-8 payload; line ``-1`` ends the task), so the parent
always knows which line a child is on. A child that dies loses only that line (``Lost``);
the rest of its task is handed to a replacement child forked at once (it sees the task,
which the children forked earlier cannot). A child that spends more than
:data:`~bfcl_safe.interp.limits.JOBS_ENTRY_GUARD_SECONDS` on one line is killed the same
way: the guard is a last resort (counted budgets bound every entry; the guard exists
for what they might miss, and its message says it fired).

Why not ``concurrent.futures``/``multiprocessing``: they cannot say which entry a dead
worker was on (``ProcessPoolExecutor`` fails every pending task with ``BrokenProcessPool``;
``multiprocessing.Pool`` waits forever for the lost task), cannot give up one hung task,
and pickle what crosses the boundary. The per-line frames above are the only "wire
format" (the payload's UTF-8 bytes behind a one-line header). Measured with
``benchmarks/bench_pool.py --copies 20`` (12,000 real entries, ``--jobs 2``, medians of 3
rounds, 2 CPUs under load 14 from other work, so rough): ForkPool 50.3 s,
``ProcessPoolExecutor`` (fork context, the same batches, pickled) 59.9 s, one process
62.6 s: ForkPool gains 19% over the standard library's pool here, besides what it does
that the latter cannot.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import struct
import threading
import time
from collections import deque
from typing import Any, Callable, NamedTuple, Protocol, Sequence

from bfcl_safe.interp.limits import JOBS_ENTRY_GUARD_SECONDS

Task = tuple[str, Sequence[str]]
Work = Callable[[str, str], str]
_INDEX = struct.Struct("<I")


class Lost(NamedTuple):
    """A line whose worker was lost: ``reason`` in a few words; ``guard``: the wall-clock
    guard fired (else the process died)."""

    reason: str
    guard: bool = False


class Pool(Protocol):
    def map(self, tasks: Sequence[Task], progress: Callable[[int], None] | None = None) -> list[list[str | Lost]]:
        ...


def cannot_fork() -> str | None:
    """Why this process should not fork now, or None. A child forked while another
    thread runs could inherit a lock that thread holds, and wait for it forever."""
    if not hasattr(os, "fork"):
        return "this platform cannot fork processes"
    if threading.active_count() > 1:
        return "other threads are running in this process"
    return None


class InProcessPool:
    """Runs every line in this process, in order (no guard: budgets bound each entry).
    ``work`` may return any object here: nothing is sent anywhere."""

    __slots__ = ("work",)

    def __init__(self, work: Callable[[str, str], Any]):
        self.work = work

    def map(self, tasks: Sequence[Task], progress: Callable[[int], None] | None = None) -> list[list[Any]]:
        out = []
        for context, lines in tasks:
            results: list[Any] = []
            for line in lines:
                results.append(self.work(context, line))
                if progress:
                    progress(1)
            out.append(results)
        return out


class _Child:
    """A forked child: its pid, the pipe ends to it and from it, and what it is doing.
    ``birth``: the items (indices into the pool's item list) it can see, those made
    before it."""

    __slots__ = ("pid", "tasks_w", "frames_r", "birth", "item", "line", "since", "buffer")

    def __init__(self, pid: int, tasks_w: int, frames_r: int, birth: int):
        self.pid = pid
        self.tasks_w = tasks_w
        self.frames_r = frames_r
        self.birth = birth
        self.item: int | None = None
        self.line = 0
        self.since = 0.0
        self.buffer = bytearray()


class ForkPool:
    """``jobs`` forked children run the lines (see the module docstring)."""

    __slots__ = ("work", "jobs", "guard_seconds")

    def __init__(self, work: Work, jobs: int, guard_seconds: float = JOBS_ENTRY_GUARD_SECONDS):
        self.work = work
        self.jobs = jobs
        self.guard_seconds = guard_seconds

    def map(self, tasks: Sequence[Task], progress: Callable[[int], None] | None = None) -> list[list[str | Lost]]:
        results: list[list[str | Lost | None]] = [[None] * len(lines) for _, lines in tasks]
        #: (task, first line) of each piece of work; a lost child's rest is appended.
        items: list[tuple[int, int]] = [(task, 0) for task, (_, lines) in enumerate(tasks) if lines]
        queue = deque(range(len(items)))
        children: dict[int, _Child] = {}

        def spawn() -> bool:
            tasks_r, tasks_w = os.pipe()
            frames_r, frames_w = os.pipe()
            try:
                pid = os.fork()
            except OSError:
                for fd in (tasks_r, tasks_w, frames_r, frames_w):
                    os.close(fd)
                return False
            if pid == 0:  # pragma: no cover - runs in the child, which never returns
                try:
                    for fd in (tasks_w, frames_r, *(f for c in children.values() for f in (c.tasks_w, c.frames_r))):
                        if fd >= 0:
                            os.close(fd)
                finally:
                    _child(tasks_r, frames_w, tasks, items, self.work)
            os.close(tasks_r)
            os.close(frames_w)
            os.set_blocking(frames_r, False)
            children[frames_r] = _Child(pid, tasks_w, frames_r, len(items))
            return True

        def assign(child: _Child) -> None:
            for position, item in enumerate(queue):
                if item < child.birth:
                    del queue[position]
                    child.item, child.since = item, time.monotonic()
                    child.line = items[item][1]
                    os.write(child.tasks_w, _INDEX.pack(item))
                    return
            child.item = None
            if child.tasks_w >= 0:  # nothing it can take: let it leave
                os.close(child.tasks_w)
                child.tasks_w = -1

        def lose(child: _Child, lost: Lost) -> None:
            """The child is gone: its line is lost, the rest of its task queued anew."""
            if child.item is None:
                return
            task, _ = items[child.item]
            lines = tasks[task][1]
            if child.line < len(lines):
                results[task][child.line] = lost
                if progress:
                    progress(1)
                if child.line + 1 < len(lines):
                    items.append((task, child.line + 1))
                    queue.append(len(items) - 1)
            child.item = None

        def reap(child: _Child, lost: Lost | None) -> None:
            del children[child.frames_r]
            os.close(child.frames_r)
            if child.tasks_w >= 0:
                os.close(child.tasks_w)
            _, status = os.waitpid(child.pid, 0)
            if lost is None:
                code = os.waitstatus_to_exitcode(status)
                how = f"signal {-code}" if code < 0 else f"exit status {code}"
                lost = Lost(f"the process scoring it died ({how})")
            lose(child, lost)

        gc.freeze()  # (children then do not copy every page of the loaded data when they collect)
        try:
            for _ in range(min(self.jobs, len(items))):
                if not spawn():
                    break
            while children:
                for child in list(children.values()):
                    if child.item is None and child.tasks_w >= 0:
                        assign(child)
                if queue and len(children) < self.jobs and spawn():
                    continue  # (a replacement for a lost child: it sees the rest of that child's task)
                now = time.monotonic()
                busy = [c.since + self.guard_seconds - now for c in children.values() if c.item is not None]
                timeout = max(0.0, min(busy)) if busy else None
                ready, _, _ = select.select(list(children), [], [], timeout)
                for fd in ready:
                    child = children[fd]
                    try:
                        data = os.read(fd, 1 << 20)
                    except BlockingIOError:
                        continue
                    if not data:
                        reap(child, None)
                        continue
                    child.buffer += data
                    if _frames(child, items, results, progress):
                        assign(child)
                now = time.monotonic()
                for child in list(children.values()):
                    if child.item is not None and now - child.since > self.guard_seconds:
                        try:
                            os.kill(child.pid, signal.SIGKILL)
                        except OSError:
                            pass
                        reap(child, Lost(f"the wall-clock guard fired after {self.guard_seconds:g} s on this entry "
                                         f"(a last resort; budgets did not stop it)", guard=True))
            if queue:  # no process could be forked: this one does the rest
                for item in queue:
                    task, first = items[item]
                    context, lines = tasks[task]
                    for number in range(first, len(lines)):
                        results[task][number] = self.work(context, lines[number])
                        if progress:
                            progress(1)
                queue.clear()
        finally:
            gc.unfreeze()
            for child in list(children.values()):  # only left if this process was interrupted
                for fd in (child.frames_r, child.tasks_w):
                    if fd >= 0:
                        os.close(fd)
                try:
                    os.kill(child.pid, signal.SIGKILL)
                except OSError:
                    pass
                os.waitpid(child.pid, 0)
        return results  # type: ignore[return-value]


def _frames(child: _Child, items, results, progress) -> bool:
    """Take the complete frames out of ``child.buffer``; True when the child finished
    its item (and is ready for the next)."""
    finished = False
    buffer = child.buffer
    position = 0
    while True:
        newline = buffer.find(b"\n", position)
        if newline < 0:
            break
        item, line, length = map(int, buffer[position:newline].split(b" "))
        end = newline + 1 + length
        if end > len(buffer):
            break
        if line < 0:
            finished = True
            child.item = None
        else:
            task = items[item][0]
            results[task][line] = buffer[newline + 1 : end].decode("utf-8", "surrogatepass")
            child.line = line + 1
            child.since = time.monotonic()
            if progress:
                progress(1)
        position = end
    del buffer[:position]
    return finished


def _child(tasks_r: int, frames_w: int, tasks, items, work: Work) -> None:  # pragma: no cover - in the child
    status = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        while True:
            raw = _read_exactly(tasks_r, _INDEX.size)
            if raw is None:
                break
            (item,) = _INDEX.unpack(raw)
            task, first = items[item]
            context, lines = tasks[task]
            for number in range(first, len(lines)):
                payload = work(context, lines[number]).encode("utf-8", "surrogatepass")
                _write_all(frames_w, b"%d %d %d\n" % (item, number, len(payload)) + payload)
            _write_all(frames_w, b"%d -1 0\n" % item)
        status = 0
    except BaseException:  # noqa: BLE001 - whatever it is, the parent sees this child die
        pass
    finally:
        os._exit(status)


def _read_exactly(fd: int, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
