"""bfcl_multi_turn: BFCL's multi-turn categories as a verifiers 0.4 environment package.

verifiers finds a taskset, its env and its harness by this module's name (``vf-eval
bfcl-multi-turn``): exactly one of each is exported below. They live in bfcl-safe
(``bfcl_safe.integrations.verifiers``); see this package's README for the arguments.
"""

from bfcl_safe.integrations.verifiers import BfclEnv, BfclHarness, BfclTaskset, load_environment

__all__ = ["BfclEnv", "BfclHarness", "BfclTaskset", "load_environment"]
