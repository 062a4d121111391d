"""Child-process harness: the reference's own ``bfcl evaluate`` (``eval_runner.main``:
scoring, then ``update_leaderboard_table_with_local_score_file`` and
``generate_leaderboard_csv``, which write the six CSVs), in the reference's environment
(the wheel's folder and a folder with its SDK dependencies; numpy and pandas from the
test environment).

    python tests/reference_leaderboard.py CONFIG_JSON

CONFIG: ``ref_dir``, ``sdk_dir``, ``project_root``, ``result_dir``, ``score_dir``,
``models`` (registry names, or null for every folder), ``categories``, ``partial``.

The model registry (``constants/model_config.py``) imports every vendor's SDK: the
handler modules it imports are replaced by modules of empty classes, except the OpenAI
handlers the test's models use, which are the reference's own. The registry's data
(names, links, prices) is the reference's, untouched.
"""

import ast
import json
import os
import sys
import types

#: Handler modules kept real (their models are scored by the reference in the tests).
REAL_HANDLERS = frozenset({
    "bfcl_eval.model_handler.api_inference.openai_completion",
    "bfcl_eval.model_handler.api_inference.openai_response",
})


def main() -> None:
    config = json.loads(sys.argv[1])
    sys.path[:0] = [config["sdk_dir"], config["ref_dir"]]
    os.environ["BFCL_PROJECT_ROOT"] = config["project_root"]
    os.environ.pop("WANDB_BFCL_PROJECT", None)
    os.environ["OPENAI_API_KEY"] = "unused-offline"  # the handlers build a client; nothing is sent
    source_path = os.path.join(config["ref_dir"], "bfcl_eval", "constants", "model_config.py")
    with open(source_path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module.startswith("bfcl_eval.model_handler"):
            if node.module in REAL_HANDLERS:
                continue
            stub = types.ModuleType(node.module)
            for alias in node.names:
                setattr(stub, alias.name, type(alias.name, (), {}))
            sys.modules[node.module] = stub

    from bfcl_eval.eval_checker import eval_runner

    sys.stdout = open(os.devnull, "w")  # the reference prints every step
    eval_runner.main(config["models"], config["categories"], config["result_dir"], config["score_dir"],
                     partial_eval=config["partial"])


if __name__ == "__main__":
    main()
