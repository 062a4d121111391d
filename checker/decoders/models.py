"""Which decoder scores a model's result files: from the model folder name, via the
wheel's model registry (read as data), unless ``--decoder`` forces one.

The registry names each model's handler class (as text) and whether it is an FC
model; the tables below say, per handler class, which of our decoders reproduces
its ``decode_execute`` in each mode (bfcl-eval 2026.3.23). ``DECODER_OF_HANDLER`` maps
handler classes to decoder *names*; the decoders themselves are
:data:`bfcl_safe.checker.decoders.DECODERS` (name -> functions).
"""

from __future__ import annotations

from typing import Callable

from bfcl_safe.checker.dataset import Dataset

#: Handler class defining ``decode_execute`` -> (decoder for FC models, decoder for prompting models).
DECODER_OF_HANDLER: dict[str, tuple[str, str]] = {
    # Both modes, chosen by ``is_fc_model``.
    "ClaudeHandler": ("fc", "prompting"),
    "MistralHandler": ("fc", "prompting"),
    "OpenAICompletionsHandler": ("fc", "prompting"),
    "OpenAIResponsesHandler": ("fc", "prompting"),
    "GeminiHandler": ("gemini_fc", "gemini_tool_code"),
    # One behaviour whatever the mode.
    "OSSHandler": ("prompting", "prompting"),
    "NvidiaHandler": ("prompting", "prompting"),
    "NemotronHandler": ("nemotron", "nemotron"),
    "PhiHandler": ("phi", "phi"),
    "NovaHandler": ("fc_list", "fc_list"),
    "ArchHandler": ("fc_list", "fc_list"),
    "Granite3FCHandler": ("fc_list", "fc_list"),
    "PhiFCHandler": ("fc_list", "fc_list"),
    "MistralFCHandler": ("fc_list", "fc_list"),
    "CohereHandler": ("cohere", "cohere"),
    "MiningHandler": ("mining", "mining"),
    "SalesforceLlamaHandler": ("json", "json"),
    "SalesforceQwenHandler": ("json", "json"),
    "BitAgentHandler": ("bitagent", "bitagent"),
    "Falcon3FCHandler": ("falcon", "falcon"),
    "QwenFCHandler": ("qwen_tool_call", "qwen_tool_call"),
    "Granite4FCHandler": ("qwen_tool_call", "qwen_tool_call"),
    "NanbeigeFCHandler": ("qwen_tool_call", "qwen_tool_call"),
    "PelicanVLFCHandler": ("qwen_tool_call", "qwen_tool_call"),
    "HammerHandler": ("hammer", "hammer"),
    "GLMHandler": ("glm", "glm"),
    "GraniteFunctionCallingHandler": ("granite", "granite"),
    "ThinkAgentHandler": ("think_agent", "think_agent"),
    "LlamaHandler_3_1": ("llama_python_tag", "llama_python_tag"),
    "MiniCPMFCHandler": ("minicpm", "minicpm"),
    "FunctionGemmaHandler": ("functiongemma", "functiongemma"),
    # Every step fails to decode in the reference (see checker.decoders.fc).
    "GorillaHandler": ("undecodable", "undecodable"),
    "NexusHandler": ("undecodable", "undecodable"),
    "BaseHandler": ("undecodable", "undecodable"),
}

#: Handler classes that inherit ``decode_execute`` -> the class they inherit it from.
INHERITED_FROM: dict[str, str] = {
    "DMCitoHandler": "MiningHandler",
    **dict.fromkeys(
        ("BielikHandler", "DeepseekReasoningHandler", "GemmaHandler", "LlamaHandler", "MiniCPMHandler",
         "QuickTestingOSSHandler", "QwenHandler"),
        "OSSHandler",
    ),
    **dict.fromkeys(
        ("DeepSeekAPIHandler", "FireworksHandler", "FunctionaryHandler", "GLMAPIHandler", "GoGoAgentHandler",
         "GrokHandler", "KimiHandler", "LingAPIHandler", "NanbeigeAPIHandler", "NovitaHandler", "QwenAPIHandler",
         "QwenAgentThinkHandler", "QwenAgentNoThinkHandler", "WriterHandler"),
        "OpenAICompletionsHandler",
    ),
}


def decoder_for_handler(handler: str | None, is_fc_model: bool) -> str | None:
    """Our decoder for a handler class name and mode, or None for a class we do not know."""
    pair = DECODER_OF_HANDLER.get(INHERITED_FROM.get(handler, handler)) if handler else None
    if pair is None:
        return None
    return pair[0] if is_fc_model else pair[1]


def decoder_for_model(model_folder: str, dataset: Dataset, report: Callable[[str], None] = lambda m: None) -> str:
    """The decoder name for a result folder (a key of ``checker.decoders.DECODERS``).

    A model the registry knows is decoded like its handler's ``decode_execute``; a
    handler class we have no entry for is decoded as ``fc`` or ``prompting`` by its
    ``is_fc_model`` (what most handlers do), with a notice; an unknown model falls back
    to ``auto`` (FC lists as FC, JSON tool-call text as JSON, other text as Python
    calls), with a one-line notice.
    """
    info = dataset.model_metadata(model_folder)
    if info is None:
        report(f"model {model_folder!r} is not in the bfcl-eval model registry; decoding its steps with 'auto'")
        return "auto"
    decoder = decoder_for_handler(info.model_handler, info.is_fc_model)
    if decoder is None:
        decoder = "fc" if info.is_fc_model else "prompting"
        report(f"model {model_folder!r} uses handler {info.model_handler!r}, which bfcl-safe does not know; "
               f"decoding its steps with {decoder!r}")
    return decoder
