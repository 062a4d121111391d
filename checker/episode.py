"""One side (the model's or the ground truth's) of one entry: its backends and method table."""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from interp import MethodTable, run_step
from interp.execute import Call


def _backend_classes() -> dict[str, type]:
    from backends.gorilla_file_system import GorillaFileSystem
    from backends.math_api import MathAPI
    from backends.message_api import MessageAPI
    from backends.posting_api import TwitterAPI
    from backends.ticket_api import TicketAPI
    from backends.trading_bot import TradingBot
    from backends.travel_booking import TravelAPI
    from backends.vehicle_control import VehicleControlAPI

    return {
        cls.__name__: cls
        for cls in (GorillaFileSystem, MathAPI, MessageAPI, TwitterAPI, TicketAPI,
                    TradingBot, TravelAPI, VehicleControlAPI)
    }


_CLASSES: dict[str, type] | None = None


def backend_class(class_name: str) -> type:
    global _CLASSES
    if _CLASSES is None:
        _CLASSES = _backend_classes()
    try:
        return _CLASSES[class_name]
    except KeyError:
        raise KeyError(f"unknown backend class {class_name!r}") from None


def instance_name(owner: str, entry_id: str, class_name: str) -> str:
    """The name the reference gives a backend instance in its globals."""
    return re.sub(r"[-./:]", "_", f"{owner}_{entry_id}_{class_name}_instance")


class Episode:
    """Backends of one entry for one side, state carried over between turns."""

    __slots__ = ("instances", "table")

    def __init__(self, instances: Mapping[str, Any], table: MethodTable):
        self.instances = instances
        self.table = table

    @classmethod
    def create(
        cls,
        entry: Mapping[str, Any],
        *,
        owner: str | None = None,
        long_context: bool = False,
        long_context_data: Callable[[], Mapping[str, Any]] | Mapping[str, Any] | None = None,
    ) -> "Episode":
        """Build the backends of ``entry`` (its ``involved_classes`` and ``initial_config``).

        ``owner`` is the prefix of the reference's instance names (``{model}_eval`` or
        ``{model}_ground_truth_eval`` when scoring); it matters for the name rewrite
        inside string arguments. ``long_context_data`` may be a loader, called only
        when needed.
        """
        involved: Sequence[str] = entry["involved_classes"]
        config = entry.get("initial_config") or {}
        data = None
        if long_context:
            data = long_context_data() if callable(long_context_data) else long_context_data
        instances = {}
        for class_name in involved:
            backend = backend_class(class_name)
            instances[class_name] = backend.from_config(
                config.get(class_name, {}), long_context=long_context, long_context_data=data
            )
        names = None
        if owner is not None:
            names = [instance_name(owner, entry["id"], c) for c in instances]
        return cls(instances, MethodTable(list(instances.values()), names))

    def run(self, calls: Iterable[Call]) -> list[str]:
        return run_step(list(calls), self.table)

    def state(self) -> dict[str, dict[str, Any]]:
        return {name: instance.public_state() for name, instance in self.instances.items()}
