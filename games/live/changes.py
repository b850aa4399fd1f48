"""What the live layer carries: a game's `Change`, and `AccountChanged`.

Both say what a backlog (a broker's, while its receiver or server is away)
keeps one of (`key`) and how two of the same key merge into one (`merged`).
Their wire format is games.live.wire.
"""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Change:
    """A game changed: its viewers fetch its new version, and the lobbies of
    `player_ids` (of every user when `open_games`) show it again."""

    game_id: int
    version: int
    player_ids: tuple[int, ...]
    # True when the list of open games changed (a game opened, was joined, or
    # an open game was withdrawn).
    open_games: bool = False

    @property
    def key(self) -> int:
        """What a backlog keeps one of: a game's latest change."""
        return self.game_id

    def merged(self, older: "Change | None") -> "Change":
        """One change that says what both say: the newer version, every lobby."""
        if older is None:
            return self
        return Change(
            self.game_id,
            max(self.version, older.version),
            tuple(sorted({*self.player_ids, *older.player_ids})),
            self.open_games or older.open_games,
        )


@dataclass(frozen=True, slots=True)
class AccountChanged:
    """A user's sessions may have ended: their open streams must re-check them."""

    user_id: int

    @property
    def key(self) -> tuple[str, int]:
        return ("account", self.user_id)

    def merged(self, older: "AccountChanged | None") -> "AccountChanged":
        return self
