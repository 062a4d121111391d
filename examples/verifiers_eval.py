"""BFCL multi-turn as a verifiers 0.4 environment, evaluated against an OpenAI-compatible
endpoint (needs ``pip install 'bfcl-safe[verifiers]'``).

    export OPENAI_API_KEY=...                                # if the endpoint needs one
    python examples/verifiers_eval.py --model MODEL --base-url http://localhost:8000/v1 -n 20

The environment (``bfcl_safe.integrations.verifiers.load_environment``) runs in verifiers'
own loop (``Env.serving()``, ``Env.run_episode``): one episode per entry, the visible tools
as OpenAI schemas turn by turn, BFCL's step limit and force-termination, the official
verdict as reward (``--partial-credit``: ``turns_passed / turns`` for failed entries).
"""

from __future__ import annotations

import argparse
import asyncio
import sys

import verifiers.v1 as vf

from bfcl_safe.integrations.verifiers import load_environment


async def evaluate(env: vf.Env, ctx: vf.ModelContext, concurrency: int) -> list[vf.Episode]:
    gate = asyncio.Semaphore(concurrency)

    async def one(task: vf.Task) -> vf.Episode:
        async with gate:
            return await env.run_episode(task, ctx)

    async with env.serving():
        return list(await asyncio.gather(*(one(task) for task in env.taskset)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--api-key-var", default="OPENAI_API_KEY")
    parser.add_argument("--categories", default="multi_turn_base")
    parser.add_argument("--ids", default=None, help="comma-separated entry ids")
    parser.add_argument("-n", "--limit", type=int, default=None)
    parser.add_argument("--partial-credit", action="store_true")
    parser.add_argument("--decoder", default=None, help="a prompting model's decoder (default: FC tool calls)")
    parser.add_argument("--data", default=None, help="bfcl-eval wheel or folder (default: the cache)")
    parser.add_argument("-c", "--concurrency", type=int, default=8)
    args = parser.parse_args(argv)
    env = load_environment(categories=args.categories.split(","), limit=args.limit, partial_credit=args.partial_credit,
                           ids=None if args.ids is None else args.ids.split(","), decoder=args.decoder,
                           data=args.data, owner=args.model.replace("/", "_"))
    ctx = vf.ModelContext(client=vf.EvalClientConfig(base_url=args.base_url, api_key_var=args.api_key_var),
                          model=args.model)
    episodes = asyncio.run(evaluate(env, ctx, args.concurrency))
    rewards = [trace.reward for episode in episodes for trace in episode.traces]
    failed = sum(1 for episode in episodes if not episode.ok)
    print(f"{len(rewards)} rollouts, mean reward {sum(rewards) / max(len(rewards), 1):.3f}, {failed} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
