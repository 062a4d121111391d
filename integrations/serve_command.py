"""``bfcl-safe serve``: bfcl-safe's episodes over HTTP in the OpenEnv convention
(:mod:`bfcl_safe.integrations.serve`, optional extra ``serve``).

Registered in the ``bfcl-safe`` group lazily by :mod:`bfcl_safe.cli`, as ``generate`` is:
this module imports only click and the shared options, so the command's help shows
without the extra; running it without the extra is a one-line ``Error:`` naming the
extra to install.
"""

from __future__ import annotations

import click

from bfcl_safe.checker.commands import data_option, open_dataset


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (the default accepts local clients only).")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@data_option
@click.option("--owner", default=None, metavar="NAME",
              help="Model folder name the episodes are scored as (BFCL's instance-name rewrite; default: neutral).")
def serve(host: str, port: int, data: str | None, owner: str | None) -> None:
    """Serve BFCL multi-turn episodes over HTTP and WebSocket (OpenEnv: /ws, /reset, /step,
    /state, /schema), one episode per WebSocket session. Needs 'pip install bfcl-safe[serve]'."""
    from bfcl_safe.integrations import serve as serving

    dataset = open_dataset(data)
    click.echo(f"bfcl-safe serve: OpenEnv environment {serving.ENV_NAME!r} on http://{host}:{port} "
               "(WebSocket sessions at /ws; Ctrl-C stops)", err=True)
    serving.serve(dataset, host, port, owner=owner)
