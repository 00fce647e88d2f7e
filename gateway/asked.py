"""An answer in the client's own API names the model the client asked for (`auto`, a configured
name, a provider's id it aliases), not the provider's id of the model that served it; which model
that was, `x-edgeway-model` says.

A client reads the name as the model its conversation is on. Claude Code keeps each answer's
`model` and, on its next turn, drops the thinking blocks of every earlier answer whose model is not
the one it now asks for (their signatures belong to another model): an answer naming
`claude-sonnet-4-5` to a client that asked for `auto` loses its thinking, and Anthropic's API
refuses the next turn of a tool loop without it. Which model may read which thinking block is the
gateway's to keep (`router.thinking`).
"""

from __future__ import annotations

from typing import Any

from router.native import Api, Event

# The events whose data carries the answer's model: Messages' `message_start` (in `message`), and
# Responses' events that carry the whole response so far (in `response`).
_HOLDER = {Api.MESSAGES: "message", Api.RESPONSES: "response"}


def named(body: dict[str, Any], model: str) -> dict[str, Any]:
    """A whole answer (a Messages `message`, a Responses `response`) naming `model`."""
    return {**body, "model": model} if "model" in body else body


def named_event(api: Api, event: Event, model: str) -> Event:
    """A stream's event in `api`, naming `model` where it names one."""
    name, data = event
    holder = data.get(_HOLDER.get(api, ""))
    if not isinstance(holder, dict) or "model" not in holder:
        return event
    return name, {**data, _HOLDER[api]: {**holder, "model": model}}
