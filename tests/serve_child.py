"""A ``bfcl-safe serve`` server in a child process for the hostile-client tests: the real
app (:func:`bfcl_safe.integrations.serve.build_app`) on 127.0.0.1, an ephemeral port printed
as ``PORT n`` once it listens (a line ``refused`` on stdin prints the guard's refusal
counts); ``--idle`` and ``--max-sessions`` lower the limits so that
expiry and the session cap can be tested in seconds."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time

from bfcl_safe.integrations.serve import build_app, server
from tests.checker_support import dataset


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--idle", type=float, default=300.0)
    parser.add_argument("--max-sessions", type=int, default=64)
    parser.add_argument("--request-seconds", type=float, default=30.0)
    args = parser.parse_args()
    app = build_app(dataset(), idle_seconds=args.idle, max_sessions=args.max_sessions,
                    request_seconds=args.request_seconds)
    running = server(app, "127.0.0.1", 0)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    while not running.started:
        if not thread.is_alive():
            sys.exit("server did not start")
        time.sleep(0.02)
    port = running.servers[0].sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    for line in sys.stdin:  # the test says what to report; EOF stops the server
        if line.strip() == "refused":
            print(json.dumps({"refused": app.refused, "open": app.open}), flush=True)
    running.should_exit = True
    thread.join(30)


if __name__ == "__main__":
    main()
