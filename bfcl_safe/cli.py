"""The ``bfcl-safe`` command, assembled at the top: the click group :func:`main` with the
command's one error boundary (:class:`BoundaryGroup`), the commands registered into it,
run by :func:`bfcl_safe.launcher.run`, the console script (also ``python -m bfcl_safe``).

The commands live with what they drive: ``evaluate``, ``explain``, ``demo`` and ``data``
in :mod:`bfcl_safe.checker.commands` (with the option helpers and errors every command shares),
``generate`` in :mod:`bfcl_safe.generate.command`, ``serve`` in
:mod:`bfcl_safe.integrations.serve_command`. Only this module, above every package,
imports them all (each when it is named or listed: :data:`LAZY_COMMANDS`); no package
imports this one.

The boundary catches every error of every command, once:

- an error bfcl-safe raises on purpose (:class:`~bfcl_safe.interp.errors.BfclSafeError`)
  becomes ``Error: <one line>`` and exit status 1 (:class:`~bfcl_safe.checker.commands.CommandError`);
- anything else is a bug: ``Internal error: <exception type> ...`` on one line, asking
  for a report, exit status 70 (:class:`~bfcl_safe.checker.commands.InternalError`; never a
  traceback);
- Ctrl-C says which score files were written and which were not (exit status 130).

Exit statuses: 0 scoring completed (whatever the accuracy); 1 could not score (bad
path, no dataset, unreadable layout); 2 usage error (click); 3 a run ``bfcl evaluate``
would not accept (entries missing without ``--partial-eval``: that file not scored, no
CSV written; a duplicate id: first occurrence scored) or files not written; 70 internal
error; 130 interrupted.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable

import click

if TYPE_CHECKING:
    from bfcl_safe.checker.parallel import Pool


def _checker_command(name: str) -> click.Command:
    from bfcl_safe.checker import commands as commands

    command = getattr(commands, name)
    assert isinstance(command, click.Command)
    return command


def _generate_command() -> click.Command:
    from bfcl_safe.generate.command import generate

    return generate


def _serve_command() -> click.Command:
    from bfcl_safe.integrations.serve_command import serve

    return serve


#: The group's commands, each imported when it is named or listed: name -> a function
#: returning the command. ``generate`` needs the optional ``openai`` extra and ``serve``
#: the ``serve`` extra (only when it runs: its help shows without it); scoring never loads them.
LAZY_COMMANDS: dict[str, Callable[[], click.Command]] = {
    "data": functools.partial(_checker_command, "data"),
    "demo": functools.partial(_checker_command, "demo"),
    "evaluate": functools.partial(_checker_command, "evaluate"),
    "explain": functools.partial(_checker_command, "explain"),
    "generate": _generate_command,
    "serve": _serve_command,
    "scores": functools.partial(_checker_command, "scores"),
}


class BoundaryGroup(click.Group):
    """The click group that is the command's one error boundary (see the module docstring),
    and where the :data:`LAZY_COMMANDS` are found."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        from bfcl_safe.checker.commands import escape_click_message

        try:
            return super().make_context(*args, **kwargs)
        except click.ClickException as error:
            escape_click_message(error)
            raise

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS and name not in self.commands:
            self.add_command(LAZY_COMMANDS[name](), name)
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context) -> Any:
        from bfcl_safe.checker import commands as commands
        from bfcl_safe.checker.commands import CommandError, InternalError, Interrupted, escape_click_message
        from bfcl_safe.interp.errors import BfclSafeError

        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort):
            raise
        except click.ClickException as error:
            escape_click_message(error)
            raise
        except BfclSafeError as error:
            raise CommandError(str(error)) from None
        except KeyboardInterrupt:
            raise Interrupted(commands.interrupted_message()) from None
        except Exception as error:  # noqa: BLE001 - the boundary: a bug, shown as one line
            raise InternalError(error) from None
        finally:
            commands.forget_runs()


def _open_ray_pool(address: str, data: str | None, jobs: int) -> "Pool":
    """``evaluate --ray-address``: connect to Ray and start ``jobs`` scoring actors
    (:mod:`bfcl_safe.integrations.ray`; ``MissingExtra`` without the ray extra)."""
    from bfcl_safe.integrations.ray import RayPool, connect

    connect(address)
    return RayPool(data, jobs)


@click.group(cls=BoundaryGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="bfcl-safe")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Score (and generate) BFCL multi-turn results safely: no model text is ever executed.

    Errors are one line (Error: ...); names and texts from files and models are shown with
    control characters escaped. See 'bfcl-safe COMMAND --help'."""
    from bfcl_safe.checker.commands import RAY_POOL_OPENER

    ctx.meta[RAY_POOL_OPENER] = _open_ray_pool
