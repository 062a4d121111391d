"""BFCL multi-turn scoring: result files, decoders, verdicts, score files, the command line."""

if __name__ != "bfcl_safe.checker":  # a second copy, imported from the source tree by its folder name
    raise ImportError("import bfcl_safe.checker, not checker: the folder checker/ is installed as bfcl_safe.checker")
