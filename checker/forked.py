"""Work shared out to forked processes, the calling process included.

``share_out(count, jobs, work, ...)`` runs ``work(0) .. work(count - 1)`` in ``jobs``
processes: ``jobs - 1`` children forked from the caller, and the caller itself. Every
process takes the next index from one queue (a pipe pre-filled with the indices), so
a slow task never leaves another process idle while work remains. A child encodes
its results as text and hands them back when the queue is empty; the caller's own
results are never encoded. Forked children share what the caller had loaded (the
dataset, imported modules) instead of loading it again, and start at once.

Nothing is lost when a child fails: its results are discarded as a whole (unless it
exited normally having sent every one) and the indices missing from the returned
dict are the caller's to redo. A child never returns into the caller's code: it
leaves with ``os._exit`` whatever happens, without flushing the caller's buffered
output, and writes nowhere but its pipes.
"""

from __future__ import annotations

import gc
import os
import signal
import struct
import threading
from typing import Any, Callable

#: The most tasks one call takes: the queue of indices must fit in a pipe's buffer
#: before any process reads it (4 KiB; POSIX pipes hold at least that much).
MAX_TASKS = 1024

_INDEX = struct.Struct("<I")


def cannot_fork() -> str | None:
    """Why this process should not fork now, or None. A child forked while another
    thread runs could inherit a lock that thread holds, and wait for it forever."""
    if not hasattr(os, "fork"):
        return "this platform cannot fork processes"
    if threading.active_count() > 1:
        return "other threads are running in this process"
    return None


def share_out(
    count: int,
    jobs: int,
    work: Callable[[int], Any],
    encode: Callable[[Any], str],
    decode: Callable[[str], Any],
    done: Callable[[int], None] = lambda index: None,
) -> dict[int, Any]:
    """Results of ``work(index)`` by index; ``done(index)`` is called in this process
    as each task finishes (children's tasks in batches, when this process looks).
    For a task a child ran, the result is ``decode(encode(result))``: it must serve the
    caller as ``result`` would."""
    if not 0 <= count <= MAX_TASKS:
        raise ValueError(f"{count} tasks; at most {MAX_TASKS} can be shared out at once")
    if count == 0:
        return {}
    queue_r, queue_w = os.pipe()
    os.write(queue_w, b"".join(_INDEX.pack(index) for index in range(count)))
    os.close(queue_w)
    progress_r, progress_w = os.pipe()
    os.set_blocking(progress_r, False)
    children: list[tuple[int, int]] = []
    results: dict[int, Any] = {}
    try:
        # Objects loaded so far are left out of the collector's scans while children
        # run (a child that scanned them would also copy every page they are on); in
        # this process, only until the children are done.
        gc.freeze()
        for _ in range(min(jobs, count) - 1):
            result_r, result_w = os.pipe()
            try:
                pid = os.fork()
            except OSError:  # no more processes: fewer share the work
                os.close(result_r)
                os.close(result_w)
                break
            if pid == 0:  # pragma: no cover - runs in the child, which never returns
                _child(queue_r, result_w, progress_w, work, encode)
            os.close(result_w)
            children.append((pid, result_r))
        os.close(progress_w)
        progress_w = -1
        for index in _indices(queue_r):
            results[index] = work(index)
            done(index)
            _report_progress(progress_r, done)
        while children:
            pid, result_r = children[0]
            data = _read_all(result_r)
            os.close(result_r)
            children.pop(0)
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) == 0:
                try:
                    results.update(_frames(data.decode("utf-8", "surrogatepass"), decode))
                except (ValueError, IndexError):  # cannot happen; if it did, the caller redoes them
                    pass
        _report_progress(progress_r, done)
    finally:
        gc.unfreeze()
        for fd in (queue_r, progress_r, progress_w):
            if fd >= 0:
                os.close(fd)
        for pid, result_r in children:  # only left if this process was interrupted
            os.close(result_r)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)
    return results


def _child(queue_r: int, result_w: int, progress_w: int, work: Callable[[int], Any],
           encode: Callable[[Any], str]) -> None:  # pragma: no cover - runs in the child
    status = 1
    try:
        parts = []
        for index in _indices(queue_r):
            payload = encode(work(index))
            parts.append(f"{index} {len(payload)}\n")
            parts.append(payload)
            os.write(progress_w, _INDEX.pack(index))
        view = memoryview("".join(parts).encode("utf-8", "surrogatepass"))
        while view:
            view = view[os.write(result_w, view):]
        status = 0
    except BaseException:  # noqa: BLE001 - whatever it is, the caller redoes this child's share
        pass
    finally:
        os._exit(status)


def _indices(queue_r: int):
    """Indices taken from the shared queue until it is empty. Each read takes one whole
    index: reads of a pipe are serialized, and it only ever holds whole indices."""
    while True:
        raw = os.read(queue_r, _INDEX.size)
        if not raw:
            return
        yield _INDEX.unpack(raw)[0]


def _report_progress(progress_r: int, done: Callable[[int], None]) -> None:
    try:
        raw = os.read(progress_r, 4 * MAX_TASKS * _INDEX.size)
    except BlockingIOError:
        return
    for (index,) in _INDEX.iter_unpack(raw):
        done(index)


def _read_all(fd: int) -> bytes:
    parts = []
    while chunk := os.read(fd, 1 << 20):
        parts.append(chunk)
    return b"".join(parts)


def _frames(text: str, decode: Callable[[str], Any]) -> dict[int, Any]:
    """``{index: decode(payload)}`` from ``"{index} {length}\\n{payload}"...``."""
    out = {}
    position = 0
    while position < len(text):
        newline = text.index("\n", position)
        index, length = map(int, text[position:newline].split(" "))
        position = newline + 1 + length
        out[index] = decode(text[newline + 1 : position])
    return out
