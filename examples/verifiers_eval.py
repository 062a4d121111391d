"""BFCL multi-turn as a verifiers environment, evaluated against an OpenAI-compatible endpoint
(needs ``pip install 'bfcl-safe[verifiers]'``).

    export OPENAI_API_KEY=...                                # if the endpoint needs one
    python examples/verifiers_eval.py --model MODEL --base-url http://localhost:8000/v1 -n 20

The environment (``bfcl_safe.integrations.verifiers.load_environment``) is what an RL
trainer built on verifiers takes: one rollout per entry, the visible tools as OpenAI
schemas turn by turn, BFCL's step limit and force-termination, the official verdict as
reward (``--partial-credit``: ``turns_passed / turns`` for failed entries).
"""

from __future__ import annotations

import argparse
import sys

import verifiers as vf

from bfcl_safe.integrations.verifiers import load_environment


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key-var", default="OPENAI_API_KEY")
    parser.add_argument("--categories", default="multi_turn_base")
    parser.add_argument("-n", "--num-examples", type=int, default=-1)
    parser.add_argument("--partial-credit", action="store_true")
    parser.add_argument("--data", default=None, help="bfcl-eval wheel or folder (default: the cache)")
    args = parser.parse_args(argv)
    env = load_environment(categories=args.categories.split(","), partial_credit=args.partial_credit,
                           data=args.data, owner=args.model.replace("/", "_"))
    client = vf.ClientConfig(api_base_url=args.base_url, api_key_var=args.api_key_var)
    results = env.evaluate_sync(client=client, model=args.model, num_examples=args.num_examples)
    rewards = [output["reward"] for output in results["outputs"]]
    print(f"{len(rewards)} rollouts, mean reward {sum(rewards) / max(len(rewards), 1):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
