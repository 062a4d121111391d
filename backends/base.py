"""What every simulated API is to the rest of bfcl-safe: the :class:`Backend` protocol.

The eight backends declare it (each lists ``Backend`` among its bases) and inherit its
one :meth:`~Backend.from_config`: the reference's ``_load_scenario`` entry point, with
the long-context check written once. Each backend writes only :meth:`~Backend.from_scenario`
(what its own ``_load_scenario`` builds) and :meth:`~Backend.public_state` (what the
checker compares); its tools are its methods marked with
:func:`bfcl_safe.interp.tools.tool`.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Self


class Backend(Protocol):
    """A simulated API: built from an entry's ``initial_config`` part, its state read
    back for the checker."""

    __slots__ = ()  # the backends are attrs classes with slots: no __dict__ from here

    @classmethod
    def from_config(
        cls,
        config: Mapping[str, Any],
        *,
        long_context: bool = False,
        long_context_data: Mapping[str, Any] | None = None,
    ) -> Self:
        """A new instance in the state the reference's ``_load_scenario`` gives; ``config``
        is not mutated.

        Args:
            config: this class's part of an entry's ``initial_config`` (missing keys take
                the reference's defaults).
            long_context: long-context mode (``multi_turn_long_context``).
            long_context_data: the long-context constants
                (``backends.long_context.load_long_context``); required when
                ``long_context`` is true, ignored otherwise.
        Raises:
            ValueError: ``long_context`` without ``long_context_data`` (or, for a class
                that reads them, without the keys it needs).
        """
        if long_context and long_context_data is None:
            raise ValueError(f"{cls.__name__}.from_config: long_context=True needs long_context_data")
        return cls.from_scenario(config, long_context_data if long_context else None)

    @classmethod
    def from_scenario(cls, config: Mapping[str, Any], long_context_data: Mapping[str, Any] | None) -> Self:
        """What :meth:`from_config` returns: ``long_context_data`` is the long-context
        constants in long-context mode, None otherwise."""
        ...

    def public_state(self) -> dict[str, Any]:
        """The attributes the checker compares, in the reference's order."""
        ...
