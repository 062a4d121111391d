"""The Ticket API: a support-ticket queue with a single logged-in user.

State (compared by the checker, in this order): ``ticket_queue`` (a list of
plain ticket dicts), ``ticket_counter`` (the next id) and ``current_user``.

Fidelity notes (the reference's behaviour, kept on purpose):

* Tickets are plain dicts, and the tools hand out the live dicts stored in the
  queue (not copies), so a ticket passed back as an argument of a nested call
  aliases the stored one exactly as in the reference.
* Tickets from a scenario may lack ``id``, ``status`` or ``created_by``; the
  lookups then raise ``KeyError`` (``Error during execution: 'id'``).
* No argument is type-checked: ``priority`` is compared with ``<``/``>`` (a
  string raises ``TypeError``), ``edit_ticket`` stores any value (even an
  out-of-range priority), ``ticket_login`` accepts any truthy username.
* Error messages echo the *argument* (``Ticket with ID True not found.``).
* ``get_user_tickets`` returns a list (rendered with ``str``), and wraps its
  not-logged-in error dict in a one-element list.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

import attrs

from bfcl_safe.backends import growth
from bfcl_safe.backends.base import Backend
from bfcl_safe.interp.tools import tool

#: Fields ``edit_ticket`` may change. A frozenset: the difference with a set
#: built from the update keys yields the same set (and iteration order, which
#: the "Invalid fields" message depends on) as the reference's set literal.
EDITABLE_FIELDS = frozenset({"title", "description", "status", "priority"})

DEFAULT_TICKET_COUNTER = 1
LOWEST_PRIORITY = 1
HIGHEST_PRIORITY = 5


def _not_found(ticket_id: Any) -> dict[str, str]:
    return {"error": f"Ticket with ID {ticket_id} not found."}


def _copy_queue(queue: Any) -> Any:
    """A copy that the tools may change: each ticket dict shallow-copied (cheap),
    anything unexpected deep-copied (the reference keeps whatever it is given)."""
    if type(queue) is list and all(type(ticket) is dict for ticket in queue):
        return [dict(ticket) for ticket in queue]
    return copy.deepcopy(queue)


@attrs.define(eq=False)
class TicketAPI(Backend):
    ticket_queue: list[dict[str, Any]]
    ticket_counter: Any
    current_user: Any

    @classmethod
    def from_scenario(cls, config: Mapping[str, Any], long_context_data: Mapping[str, Any] | None) -> TicketAPI:
        """A scenario's queue; the reference adds nothing in
        long-context mode. Each ticket dict is copied (the tools change tickets'
        top-level keys only)."""
        queue = _copy_queue(config["ticket_queue"]) if "ticket_queue" in config else []
        return cls(
            ticket_queue=queue,
            ticket_counter=config.get("ticket_counter", DEFAULT_TICKET_COUNTER),
            current_user=config.get("current_user", None),
        )

    def public_state(self) -> dict[str, Any]:
        """The attributes the checker compares, in the reference's order."""
        return {
            "ticket_queue": self.ticket_queue,
            "ticket_counter": self.ticket_counter,
            "current_user": self.current_user,
        }

    def _find(self, ticket_id: Any) -> dict[str, Any] | None:
        # First ticket whose id equals (==, so 1 == 1.0 == True) the argument.
        growth.scan(self.ticket_queue)
        for ticket in self.ticket_queue:
            if ticket["id"] == ticket_id:
                return ticket
        return None

    # -- session ---------------------------------------------------------------

    @tool
    def ticket_login(self, username: str, password: str) -> dict[str, bool]:
        """Log in; any non-empty username and password are accepted.

        Args:
            username: The user name.
            password: The password.

        Returns:
            success: Whether the user is now logged in.
        """
        if not (username and password):
            return {"success": False}
        self.current_user = username
        return {"success": True}

    @tool
    def ticket_get_login_status(self) -> dict[str, bool]:
        """Whether a user is logged in.

        Returns:
            login_status: True when logged in.
        """
        return {"login_status": bool(self.current_user)}

    @tool
    def logout(self) -> dict[str, bool]:
        """Log the current user out.

        Returns:
            success: False when nobody was logged in.
        """
        if not self.current_user:
            return {"success": False}
        self.current_user = None
        return {"success": True}

    # -- tickets -----------------------------------------------------------------

    @tool
    def create_ticket(self, title: str, description: str = "", priority: int = 1) -> dict[str, Any]:
        """Open a new ticket owned by the logged-in user.

        Args:
            title: Short title.
            description: [Optional] Details; empty by default.
            priority: [Optional] 1 (lowest, default) to 5 (highest).

        Returns:
            The stored ticket: id, title, description, status, priority, created_by.
        """
        if not self.current_user:
            return {"error": "User not authenticated. Please log in to create a ticket."}
        if priority < LOWEST_PRIORITY or priority > HIGHEST_PRIORITY:
            return {"error": "Invalid priority. Priority must be between 1 and 5."}
        growth.store(title, description, priority, records=6, inside=(self.ticket_queue,))
        ticket = {
            "id": self.ticket_counter,
            "title": title,
            "description": description,
            "status": "Open",
            "priority": priority,
            "created_by": self.current_user,
        }
        self.ticket_queue.append(ticket)
        self.ticket_counter += 1
        return ticket

    @tool
    def get_ticket(self, ticket_id: int) -> dict[str, Any]:
        """Look a ticket up by id.

        Args:
            ticket_id: The ticket's id.

        Returns:
            The stored ticket.
        """
        ticket = self._find(ticket_id)
        if not ticket:
            return _not_found(ticket_id)
        return ticket

    @tool
    def close_ticket(self, ticket_id: int) -> dict[str, str]:
        """Set a ticket's status to Closed.

        Args:
            ticket_id: The ticket's id.

        Returns:
            status: Confirmation text.
        """
        ticket = self._find(ticket_id)
        if not ticket:
            return _not_found(ticket_id)
        if ticket["status"] == "Closed":
            return {"error": f"Ticket with ID {ticket_id} is already closed."}
        ticket["status"] = "Closed"
        return {"status": f"Ticket {ticket_id} has been closed successfully."}

    @tool
    def resolve_ticket(self, ticket_id: int, resolution: str) -> dict[str, str]:
        """Set a ticket's status to Resolved and record the resolution.

        Args:
            ticket_id: The ticket's id.
            resolution: What was done.

        Returns:
            status: Confirmation text.
        """
        ticket = self._find(ticket_id)
        if not ticket:
            return _not_found(ticket_id)
        if ticket["status"] == "Resolved":
            return {"error": f"Ticket with ID {ticket_id} is already resolved."}
        growth.store(resolution, records=1, inside=(self.ticket_queue, ticket))
        ticket["status"] = "Resolved"
        ticket["resolution"] = resolution
        return {"status": f"Ticket {ticket_id} has been resolved successfully."}

    @tool
    def edit_ticket(self, ticket_id: int, updates: dict[str, Any]) -> dict[str, str]:
        """Change a ticket's title, description, status or priority.

        Args:
            ticket_id: The ticket's id.
            updates: New values by field; None values are skipped.

        Returns:
            status: Confirmation text.
        """
        ticket = self._find(ticket_id)
        if not ticket:
            return _not_found(ticket_id)
        # ``set(updates.keys())``, not ``set(updates)``: the two build hash tables
        # of different sizes, and the message lists the set in iteration order.
        unknown = set(updates.keys()) - EDITABLE_FIELDS
        if unknown:
            return {"error": f"Invalid fields for update: {', '.join(unknown)}"}
        # A value may be a live part of the state (``get_ticket(...)``): measured first.
        growth.store(*(value for value in updates.values() if value is not None), records=0,
                     inside=(self.ticket_queue, ticket))
        for field, value in updates.items():
            if value is not None:
                ticket[field] = value
        return {"status": f"Ticket {ticket_id} has been updated successfully."}

    @tool
    def get_user_tickets(self, status: str | None = None) -> list[dict[str, Any]]:
        """Tickets created by the logged-in user, optionally only those with a status.

        Args:
            status: [Optional] Status to keep, compared case-insensitively.

        Returns:
            The matching stored tickets.
        """
        if not self.current_user:
            return [{"error": "User not authenticated. Please log in to view tickets."}]
        growth.scan(self.ticket_queue)
        mine = [ticket for ticket in self.ticket_queue if ticket["created_by"] == self.current_user]
        if not status:
            return mine
        # The ticket's status is lowered before the argument (which error shows first).
        return [ticket for ticket in mine if ticket["status"].lower() == status.lower()]
