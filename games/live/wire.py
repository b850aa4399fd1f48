"""The wire format of every broker: a JSON list of items, a game's Change as
a list `[game id, version, [player ids], open games]` and an AccountChanged
as `{"account": user id}`."""

import json

from .changes import AccountChanged, Change


def _item(change: Change | AccountChanged) -> list | dict:
    if isinstance(change, AccountChanged):
        return {"account": change.user_id}
    return [change.game_id, change.version, list(change.player_ids), change.open_games]


def encode(items: list[Change | AccountChanged]) -> str:
    return json.dumps([_item(item) for item in items])


def decode(text: str | bytes) -> list[Change | AccountChanged]:
    """What a payload says; ValueError/TypeError/KeyError when it is not one."""
    items = []
    for item in json.loads(text):
        if isinstance(item, dict):
            items.append(AccountChanged(int(item["account"])))
            continue
        game_id, version, players, is_open = item
        items.append(
            Change(int(game_id), int(version), tuple(map(int, players)), bool(is_open))
        )
    return items
