"""The eight simulated BFCL APIs, pure Python; tools marked with ``@tool``."""

if __name__ != "bfcl_safe.backends":  # a second copy, imported from the source tree by its folder name
    raise ImportError("import bfcl_safe.backends, not backends: the folder backends/ is installed as "
                      "bfcl_safe.backends")
