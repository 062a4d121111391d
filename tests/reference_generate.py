"""Child-process harness: the reference's own inference pipeline (``bfcl generate``'s
``_llm_response_generation.main``) with its ``OpenAICompletionsHandler``, against an
OpenAI-compatible endpoint, in the reference's environment (the wheel's folder and a
folder with its SDK dependencies, never bfcl-safe's).

    python tests/reference_generate.py CONFIG_JSON

CONFIG: ``ref_dir``, ``sdk_dir``, ``base_url``, ``registry_name``, ``api_name``,
``mode`` (fc/prompting), ``categories``, ``result_dir``, ``num_threads``, ``project_root``,
and optionally ``ids`` (then BFCL's --run-ids file is written), ``allow_overwrite``,
``include_input_log`` and ``exclude_state_log``.

The model registry (``constants/model_config.py`` imports every vendor's SDK) is
replaced by one holding only this model; numpy and pandas (imported by the score
helpers, unused by inference) by empty modules. Everything else is the reference's.
"""

import json
import os
import sys
import types


def main() -> None:
    config = json.loads(sys.argv[1])
    sys.path[:0] = [config["sdk_dir"], config["ref_dir"]]
    os.environ["OPENAI_BASE_URL"] = config["base_url"]
    os.environ["OPENAI_API_KEY"] = "scripted-key"
    os.environ["BFCL_PROJECT_ROOT"] = config["project_root"]
    for name in ("numpy", "pandas"):
        sys.modules[name] = types.ModuleType(name)

    from dataclasses import dataclass
    from typing import Optional

    from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler

    @dataclass
    class ModelConfig:
        model_name: str
        display_name: str
        url: str
        org: str
        license: str
        model_handler: type
        input_price: Optional[float] = None
        output_price: Optional[float] = None
        is_fc_model: bool = True
        underscore_to_dot: bool = False

    registry = types.ModuleType("bfcl_eval.constants.model_config")
    registry.ModelConfig = ModelConfig
    registry.MODEL_CONFIG_MAPPING = {
        config["registry_name"]: ModelConfig(
            model_name=config["api_name"], display_name=config["registry_name"], url="", org="", license="",
            model_handler=OpenAICompletionsHandler, is_fc_model=config["mode"] == "fc",
        )
    }
    sys.modules[registry.__name__] = registry

    from bfcl_eval import _llm_response_generation as generation

    run_ids = bool(config.get("ids"))
    if run_ids:
        by_category = {}
        for entry_id in config["ids"]:
            by_category.setdefault(entry_id.rsplit("_", 1)[0], []).append(entry_id)
        with open(os.path.join(config["project_root"], "test_case_ids_to_generate.json"), "w") as handle:
            json.dump(by_category, handle)
    args = types.SimpleNamespace(
        model=[config["registry_name"]], test_category=config["categories"], temperature=0.001,
        include_input_log=config.get("include_input_log", False), exclude_state_log=config.get("exclude_state_log", False), num_gpus=1, num_threads=config["num_threads"],
        gpu_memory_utilization=0.9, backend="sglang", skip_server_setup=True, local_model_path=None,
        result_dir=config["result_dir"], allow_overwrite=config.get("allow_overwrite", False), run_ids=run_ids,
        enable_lora=False, max_lora_rank=None, lora_modules=None,
    )
    # The reference prints every step; keep its output out of the test's.
    sys.stdout = open(os.devnull, "w")
    generation.main(args)


if __name__ == "__main__":
    main()
