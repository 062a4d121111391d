"""The scripted chat-completions server, shipped as :mod:`bfcl_safe.checker.scripted_server`
(``python -m bfcl_safe.checker.scripted_server``); the tests import it from here too."""

from bfcl_safe.checker.scripted_server import *  # noqa: F401,F403
from bfcl_safe.checker.scripted_server import __doc__ as _doc  # noqa: F401
