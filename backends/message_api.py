"""The Message API: users of a workspace, a login, and one shared inbox of messages.

Behaviour follows the reference ``MessageAPI`` of bfcl-eval, quirks included (each
one is marked ``Quirk:``). The inbox is a list of one-entry dicts
``{receiver_id: content}``; it does not record who sent a message.
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Mapping, Optional, Union

import attrs

from bfcl_safe.backends import growth
from bfcl_safe.backends.base import Backend
from bfcl_safe.backends.config_data import copy_data
from bfcl_safe.backends.seeded import LazyRandom
from bfcl_safe.interp.tools import tool

#: Seed of the id generator when the scenario gives none.
DEFAULT_RANDOM_SEED = 200191
#: Bounds (inclusive) of generated message ids.
MESSAGE_ID_RANGE = (10000, 99999)


def _default_user_map() -> dict[str, str]:
    return {"Alice": "USR001", "Bob": "USR002", "Catherine": "USR003", "Daniel": "USR004"}


def _default_inbox() -> list[dict[str, str]]:
    return [
        {"USR002": "My name is Alice. I want to connect."},
        {"USR003": "Could you upload the file?"},
        {"USR004": "Could you upload the file?"},
    ]


def _first_entry(message: dict) -> tuple[Any, Any]:
    # Same expression as the reference, so that an empty dict raises the same IndexError.
    return list(message.items())[0]


@attrs.define(eq=False)
class MessageAPI(Backend):
    """Workspace messaging: look up users, log in, send, delete and search messages."""

    generated_ids: set
    user_count: int
    user_map: Dict[str, str]
    inbox: List[Dict[str, str]]
    message_count: int
    current_user: Optional[str]
    _random: random.Random | LazyRandom

    @classmethod
    def from_scenario(cls, config: Mapping[str, Any], long_context_data: Mapping[str, Any] | None) -> MessageAPI:
        """The state the reference's ``_load_scenario`` builds
        (long-context mode adds no data to this API)."""
        # Order of the reads follows the reference, so a bad config fails the same way.
        rng = LazyRandom(config.get("random_seed", DEFAULT_RANDOM_SEED))
        return cls(
            generated_ids=copy_data(config["generated_ids"]) if "generated_ids" in config else set(),
            user_count=copy_data(config["user_count"]) if "user_count" in config else 4,
            user_map=copy_data(config["user_map"]) if "user_map" in config else _default_user_map(),
            inbox=copy_data(config["inbox"]) if "inbox" in config else _default_inbox(),
            message_count=copy_data(config["message_count"]) if "message_count" in config else 3,
            current_user=copy_data(config["current_user"]) if "current_user" in config else None,
            random=rng,
        )

    def public_state(self) -> dict[str, Any]:
        """The attributes the checker compares, in the reference's order."""
        return {
            "generated_ids": self.generated_ids,
            "user_count": self.user_count,
            "user_map": self.user_map,
            "inbox": self.inbox,
            "message_count": self.message_count,
            "current_user": self.current_user,
        }

    def _generate_id(self) -> dict[str, int]:
        """Draw a message id not drawn before; returns ``{"new_id": id}``.

        Once every id of the range is taken the reference draws forever; that call is
        refused (BudgetExceeded ``message_ids``) instead, before anything changes.
        """
        low, high = MESSAGE_ID_RANGE
        if len(self.generated_ids) >= high - low + 1 and all(
            n in self.generated_ids for n in range(low, high + 1)
        ):
            growth.refuse_above(growth.MESSAGE_IDS, high - low + 2)
        new_id = self._random.randint(low, high)
        while new_id in self.generated_ids:
            new_id = self._random.randint(low, high)
        self.generated_ids.add(new_id)
        return {"new_id": new_id}

    def _require_login(self) -> dict[str, str] | None:
        # Every tool that needs a login then scans the inbox or the users.
        growth.scan(self.inbox, self.user_map)
        if not self.current_user:
            return {"error": "No user is currently logged in."}
        return None

    @tool
    def list_users(self) -> Dict[str, List[str]]:
        """Names of all users of the workspace.

        Returns:
            user_list: the user names.
        """
        growth.scan(self.user_map)
        return {"user_list": list(self.user_map.keys())}

    @tool
    def get_user_id(self, user: str) -> Dict[str, Optional[str]]:
        """Look up a user's id by name.

        Args:
            user: the user name.
        Returns:
            user_id: the id, or an error when the name is unknown.
        """
        if user not in self.user_map:
            return {"error": f"User '{user}' not found in the workspace."}
        return {"user_id": self.user_map.get(user)}

    @tool
    def message_login(self, user_id: str) -> Dict[str, Union[str, bool]]:
        """Log in to the messaging app as a user.

        Args:
            user_id: id of the user.
        Returns:
            login_status: whether it worked; message: what happened.
        """
        growth.scan(self.user_map)
        if user_id not in list(self.user_map.values()):
            return {"login_status": False, "message": f"User ID '{user_id}' not found."}
        self.current_user = user_id
        return {"login_status": True, "message": f"User '{user_id}' logged in successfully."}

    @tool
    def message_get_login_status(self) -> Dict[str, bool]:
        """Whether a user is logged in.

        Returns:
            login_status: True when someone is logged in.
        """
        return {"login_status": bool(self.current_user)}

    @tool
    def send_message(self, receiver_id: str, message: str) -> Dict[str, Any]:
        """Send a message to a user (needs a login).

        Args:
            receiver_id: id of the receiver.
            message: the text.
        Returns:
            sent_status, message_id and a status message; or an error.
        """
        denied = self._require_login()
        if denied:
            return denied
        if receiver_id not in self.user_map.values():
            return {"error": f"Receiver ID '{receiver_id}' not found."}
        growth.store(receiver_id, message, records=2, inside=(self.inbox,))  # an inbox item and an id
        # Quirk: message_id is the whole {"new_id": n} dict, not the number.
        message_id = self._generate_id()
        self.inbox.append({receiver_id: message})
        self.message_count += 1
        return {
            "sent_status": True,
            "message_id": message_id,
            "message": f"Message sent to '{receiver_id}' successfully.",
        }

    @tool
    def delete_message(self, receiver_id: str) -> Dict[str, Any]:
        """Delete the latest message to a receiver (needs a login).

        Args:
            receiver_id: id of the receiver.
        Returns:
            deleted_status, receiver_id and a status message; or an error.
        """
        denied = self._require_login()
        if denied:
            return denied
        for message in reversed(self.inbox):
            receiver, _ = _first_entry(message)
            if receiver == receiver_id:
                # Quirk: list.remove drops the FIRST message equal to the latest one,
                # which is an earlier duplicate when the same text was sent twice.
                self.inbox.remove(message)
                return {
                    "deleted_status": True,
                    "receiver_id": receiver,
                    "message": f"Receiver {receiver_id}'s latest message deleted successfully.",
                }
        return {"error": f"Receiver ID {receiver_id} not found."}

    @tool
    def view_messages_sent(self) -> Dict[str, Any]:
        """All messages, grouped by receiver (needs a login).

        Quirk: the inbox does not record senders, so every message is listed.

        Returns:
            messages: receiver id -> list of contents; or an error.
        """
        denied = self._require_login()
        if denied:
            return denied
        grouped: dict[Any, list] = {}
        for message in self.inbox:
            receiver, content = _first_entry(message)
            if receiver not in grouped:
                grouped[receiver] = [content]
            else:
                grouped[receiver].append(content)
        return {"messages": grouped}

    @tool
    def add_contact(self, user_name: str) -> Dict[str, Union[bool, str]]:
        """Add a user to the workspace with the next free id.

        Args:
            user_name: name of the new contact.
        Returns:
            added_status, user_id and a status message; or an error.
        """
        growth.scan(self.user_map)
        if user_name in self.user_map:
            return {"error": f"User name '{user_name}' already exists."}
        growth.store(user_name)
        # Quirk: the count goes up even when the new id then turns out to be taken.
        self.user_count += 1
        user_id = f"USR{str(self.user_count).zfill(3)}"
        if user_id in self.user_map.values():
            return {"error": f"User ID '{user_id}' already exists."}
        self.user_map[user_name] = user_id
        return {
            "added_status": True,
            "user_id": user_id,
            "message": f"Contact '{user_name}' added successfully.",
        }

    @tool
    def search_messages(self, keyword: str) -> Dict[str, Any]:
        """Messages whose content contains a keyword, ignoring case (needs a login).

        Args:
            keyword: the text to look for.
        Returns:
            results: list of {receiver_id, message}; or an error.
        """
        denied = self._require_login()
        if denied:
            return denied
        needle = keyword.lower()
        results = []
        for message in self.inbox:
            receiver, content = _first_entry(message)
            if needle in content.lower():
                results.append({"receiver_id": receiver, "message": content})
        return {"results": results}

    @tool
    def get_message_stats(self) -> Dict[str, Any]:
        """Counts over the inbox (needs a login).

        Returns:
            stats: received_count (all messages) and total_contacts (distinct receivers); or an error.
        """
        denied = self._require_login()
        if denied:
            return denied
        receivers = set()
        count = 0
        for message in self.inbox:
            receiver, _ = _first_entry(message)
            count += 1
            receivers.add(receiver)
        return {"stats": {"received_count": count, "total_contacts": len(receivers)}}
