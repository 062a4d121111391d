"""The eight backends declare :class:`bfcl_safe.backends.base.Backend` and share its one
``from_config`` (issue 26): the long-context check is written once, every backend
builds through its own ``from_scenario``, and its state is read by ``public_state``."""

from __future__ import annotations

from typing import Any

import pytest

from bfcl_safe.backends.base import Backend
from bfcl_safe.checker.episode import backend_class
from tests.checker_support import dataset
from tests.refenv import BACKEND_MODULES

CLASSES = sorted(BACKEND_MODULES)


@pytest.mark.parametrize("name", CLASSES)
def test_every_backend_declares_the_protocol_and_inherits_its_from_config(name: str) -> None:
    cls = backend_class(name)
    assert cls.__mro__[1] is Backend  # declared (a Protocol: not runtime-checkable)
    assert "from_config" not in vars(cls), "from_config is written once, in Backend"
    assert "from_scenario" in vars(cls) and "public_state" in vars(cls)
    assert not hasattr(cls.from_config({}), "__dict__"), "slots kept: the protocol adds no __dict__"


@pytest.mark.parametrize("name", CLASSES)
def test_long_context_without_its_data_is_refused_by_every_backend(name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name}\.from_config: long_context=True needs long_context_data$"):
        backend_class(name).from_config({}, long_context=True)


@pytest.mark.parametrize("name", CLASSES)
def test_from_scenario_gets_the_data_in_long_context_mode_only(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = backend_class(name)
    seen: list[Any] = []
    real = cls.from_scenario

    def spy(config: Any, long_context_data: Any) -> Any:
        seen.append(long_context_data)
        return real(config, long_context_data)

    monkeypatch.setattr(cls, "from_scenario", staticmethod(spy))
    data = dataset().long_context_data()
    cls.from_config({}, long_context=False, long_context_data=data)
    cls.from_config({}, long_context=True, long_context_data=data)
    assert seen == [None, data]


def test_long_context_mode_is_what_the_backends_record() -> None:
    data = dataset().long_context_data()
    for name in ("GorillaFileSystem", "TradingBot", "TravelAPI", "VehicleControlAPI"):
        cls = backend_class(name)
        assert cls.from_config({}, long_context=True, long_context_data=data).long_context is True
        assert cls.from_config({}, long_context=False, long_context_data=data).long_context is False
