"""A seeded random generator made on first use.

Backends seed a ``random.Random`` per instance, as the reference does; most instances
never draw from it, and seeding costs several microseconds. An ``int`` seed cannot fail,
so it is seeded lazily; any other seed is seeded at once, so that a bad one fails at
load time exactly like in the reference. The draws are the same either way.
"""

from __future__ import annotations

import random
from typing import Any


class LazyRandom:
    """Stands for ``random.Random(seed)``; every attribute comes from that generator."""

    __slots__ = ("_seed", "_generator")

    def __init__(self, seed: Any):
        self._seed = seed
        self._generator = None if type(seed) is int else random.Random(seed)

    def __getattr__(self, name: str) -> Any:
        # Only reached for what the slots do not hold: the generator's own attributes
        # (and, on a copy under construction, the empty slots themselves).
        if name in LazyRandom.__slots__:
            raise AttributeError(name)
        if self._generator is None:
            self._generator = random.Random(self._seed)
        return getattr(self._generator, name)
