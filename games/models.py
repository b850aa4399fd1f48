"""Games and moves: fields, constraints and indexes, and thin helpers that
read one row. Every write goes through games.services; the database refuses an
impossible game (Game's constraints: games.constraints). The reads pages need
are the managers' methods (games.queries); the choices' values, games.choices.
"""

import secrets

from django.conf import settings
from django.db import connection, models
from django.db.models import F, Q
from django.db.models.functions import Length
from django.db.models.lookups import Exact
from django.urls import reverse
from django.utils.translation import gettext_lazy

from . import rules, sql
from .choices import (
    FINISHED_STATUSES,
    RESULT_STATUSES,
    UNCOUNTED_OUTCOMES,
    GameStatus,
    MarkChoice,
    ResultOutcome,
)
from .constraints import GAME_CONSTRAINTS
from .queries import (
    BlockQuerySet,
    GameQuerySet,
    PlayerRecordQuerySet,
    PlayerResultQuerySet,
    SeriesQuerySet,
)


class Series(models.Model):
    """The running score between two players (or one, playing both sides), kept by
    games.services when a game ends, so that a game page shows it from one join."""

    player_a = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    player_b = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    a_wins = models.PositiveIntegerField(default=0)
    b_wins = models.PositiveIntegerField(default=0)
    draws = models.PositiveIntegerField(default=0)

    objects = SeriesQuerySet.as_manager()

    class Meta:
        verbose_name_plural = gettext_lazy("series")
        constraints = [
            models.UniqueConstraint(
                fields=["player_a", "player_b"], name="series_unique_pair"
            ),
            models.CheckConstraint(
                condition=Q(player_a__lte=F("player_b")), name="series_pair_ordered"
            ),
        ]

    def __str__(self) -> str:
        return f"Series {self.player_a_id} v {self.player_b_id}"

    def wins_of(self, user_id: int) -> int:
        return self.a_wins if user_id == self.player_a_id else self.b_wins


class GameManager(models.Manager.from_queryset(GameQuerySet)):
    def for_page(self, game_id: int, viewer) -> "Game":
        """The game `game_id` as its pages show it to `viewer`, with its players
        (their name, whether their account is open, whether a guest) and its
        series, in one statement written out by hand (sql.GAME_PAGE_READ:
        built by the ORM, the same query cost a third of a cached page's CPU).
        Not joined: the rematch, read only when a finished game's page is
        rendered, and the invitation, read only while the game waits. Raises
        Game.DoesNotExist, also for a game `viewer` may not see (visible_to): a
        waiting game of someone who blocked them, answered exactly as a game
        that does not exist."""
        game = None
        if self.model.can_be_pk(game_id):
            game = sql.read_game_page(self.model, game_id, viewer.pk)
        if game is None:
            raise self.model.DoesNotExist(f"No game {game_id!r}.")
        return game


class Game(models.Model):
    player_x = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        verbose_name=gettext_lazy("player X"),
        related_name="games_as_x",
        null=True,
        blank=True,
    )
    player_o = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        verbose_name=gettext_lazy("player O"),
        related_name="games_as_o",
        null=True,
        blank=True,
    )
    status = models.CharField(
        gettext_lazy("status"),
        max_length=16,
        choices=GameStatus.choices,
        default=GameStatus.IN_PROGRESS,
    )
    # Denormalised so that a game renders from its own row; Move rows are the
    # history and the audit trail, and must replay to this board.
    board = models.CharField(
        gettext_lazy("board"),
        max_length=rules.CELLS,
        default=rules.EMPTY * rules.CELLS,
    )
    move_count = models.PositiveSmallIntegerField(gettext_lazy("moves"), default=0)
    # The cells in the order they were played, one digit (row * 3 + col) each:
    # the move list and replay render from this row without reading Move rows.
    move_order = models.CharField(max_length=rules.CELLS, default="", blank=True)
    winning_line = models.PositiveSmallIntegerField(
        gettext_lazy("winning line"), null=True, blank=True
    )
    # Bumped by every change (join, move, forfeit): what live viewers compare.
    version = models.PositiveIntegerField(gettext_lazy("version"), default=1)
    series = models.ForeignKey(
        Series, on_delete=models.PROTECT, related_name="games", null=True, blank=True
    )
    rematch_of = models.OneToOneField(
        "self",
        on_delete=models.SET_NULL,
        related_name="rematch",
        null=True,
        blank=True,
    )
    # Who started the game (null for games stored before this was recorded).
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="+",
        null=True,
        blank=True,
    )
    aborted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        related_name="+",
        null=True,
        blank=True,
    )
    created_at = models.DateTimeField(gettext_lazy("created"), auto_now_add=True)
    updated_at = models.DateTimeField(gettext_lazy("updated"), auto_now=True)
    finished_at = models.DateTimeField(gettext_lazy("finished"), null=True, blank=True)
    # Private: once started, only its players may see it (games.services.privacy);
    # public games are readable by anyone with the link.
    is_private = models.BooleanField(
        gettext_lazy("private"), default=False, db_default=False
    )

    objects = GameManager()

    class Meta:
        verbose_name = gettext_lazy("game")
        verbose_name_plural = gettext_lazy("games")
        ordering = ["-updated_at", "-id"]
        indexes = [
            models.Index(fields=["player_x", "-updated_at"], name="game_x_recent"),
            models.Index(fields=["player_o", "-updated_at"], name="game_o_recent"),
            models.Index(
                fields=["-created_at"],
                name="game_open",
                condition=Q(status=GameStatus.WAITING),
            ),
            models.Index(fields=["status", "-created_at"], name="game_status_recent"),
        ]
        constraints = GAME_CONSTRAINTS

    def __str__(self) -> str:
        """ "Game 7: alice vs bob", by username: for the admin and the shell."""
        x, o = (
            player.get_username() if player else "(open)"
            for player in (self.player_x, self.player_o)
        )
        return f"Game {self.pk}: {x} vs {o}"

    def get_absolute_url(self) -> str:
        return reverse("game_detail", args=[self.pk])

    @classmethod
    def can_be_pk(cls, value) -> bool:
        """Whether `value` can be a game's id: PostgreSQL refuses a statement
        comparing an integer column with an integer out of its range (the ORM
        returns no rows for such a lookup)."""
        low, high = connection.ops.integer_field_range(cls._meta.pk.get_internal_type())
        return isinstance(value, int) and low <= value <= high

    @property
    def state(self) -> rules.GameState:
        """The rules' view of this game (a waiting game is an empty running board)."""
        status = (
            rules.Status.IN_PROGRESS
            if self.status == GameStatus.WAITING
            else rules.Status(self.status)
        )
        return rules.GameState(rules.Board(self.board), status)

    @property
    def rules_board(self) -> rules.Board:
        return rules.Board(self.board)

    @property
    def played_cells(self) -> list[tuple[int, int]]:
        """(row, col) of each move, in the order played."""
        return [rules.cell_of(int(index)) for index in self.move_order]

    @property
    def is_waiting(self) -> bool:
        return self.status == GameStatus.WAITING

    @property
    def is_in_progress(self) -> bool:
        return self.status == GameStatus.IN_PROGRESS

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    @property
    def is_aborted(self) -> bool:
        return self.status == GameStatus.ABORTED

    @property
    def can_abort(self) -> bool:
        """Whether a player may abort it now (rules.GameState.can_abort)."""
        return not self.is_finished and self.state.can_abort

    @property
    def next_mark(self) -> str | None:
        """Whose turn it is, or None when no move can be made."""
        return rules.Board(self.board).next_mark.value if self.is_in_progress else None

    @property
    def winner_mark(self) -> str | None:
        if self.status not in RESULT_STATUSES:
            return None
        winner = rules.Status(self.status).winner
        return winner.value if winner else None

    @property
    def winning_cells(self) -> list[tuple[int, int]] | None:
        return rules.line_cells(self.winning_line)

    @property
    def series_score(self) -> tuple[int, int, int] | None:
        """(wins of X's player, wins of O's player, draws) across their games."""
        if self.series_id is None:
            return None
        series = self.series
        return (
            series.wins_of(self.player_x_id),
            series.wins_of(self.player_o_id),
            series.draws,
        )

    @property
    def has_both_players(self) -> bool:
        """False for an open game, waiting or withdrawn before anyone joined."""
        return self.player_x_id is not None and self.player_o_id is not None

    def hidden_from_visitor(self, viewer) -> bool:
        """Whether `viewer` is a visitor not logged in and the game has not
        started: a game is readable by anyone with its link only once both
        players are in (and unless private: Game.objects.for_page)."""
        return not viewer.is_authenticated and not self.has_both_players

    @property
    def is_invitation(self) -> bool:
        """Joinable only through its link (Invitation); select_related
        ("invitation") spares the query."""
        return hasattr(self, "invitation")

    @property
    def is_self_play(self) -> bool:
        return self.player_x_id is not None and self.player_x_id == self.player_o_id

    def player_for(self, mark: str | None):
        if mark == rules.Mark.X:
            return self.player_x
        if mark == rules.Mark.O:
            return self.player_o
        return None

    def player_for_id(self, user_id: int | None):
        """The player (as loaded with this game) whose id is `user_id`."""
        if user_id is not None and user_id == self.player_x_id:
            return self.player_x
        if user_id is not None and user_id == self.player_o_id:
            return self.player_o
        return None

    @property
    def created_by_player(self):
        """Who started the game, without a query of its own."""
        return self.player_for_id(self.created_by_id)

    def is_player(self, user) -> bool:
        return user.is_authenticated and user.pk in (self.player_x_id, self.player_o_id)

    def marks_for(self, user) -> list[str]:
        """The marks `user` plays in this game: none, one, or both (self-play)."""
        if not user.is_authenticated:
            return []
        return [
            mark
            for mark, player_id in (
                (rules.Mark.X, self.player_x_id),
                (rules.Mark.O, self.player_o_id),
            )
            if player_id == user.pk
        ]

    def is_turn_of(self, user) -> bool:
        return self.next_mark is not None and self.next_mark in self.marks_for(user)


class Move(models.Model):
    game = models.ForeignKey(
        Game,
        on_delete=models.CASCADE,
        verbose_name=gettext_lazy("game"),
        related_name="moves",
    )
    sequence_number = models.PositiveSmallIntegerField(gettext_lazy("number"))
    # Zero-based, as the rules count; pages name the cell 1-based.
    row = models.PositiveSmallIntegerField(gettext_lazy("row (0–2)"))
    col = models.PositiveSmallIntegerField(gettext_lazy("column (0–2)"))
    player = models.CharField(
        gettext_lazy("mark"), max_length=1, choices=MarkChoice.choices
    )
    created_at = models.DateTimeField(gettext_lazy("played"), auto_now_add=True)

    class Meta:
        verbose_name = gettext_lazy("move")
        verbose_name_plural = gettext_lazy("moves")
        ordering = ["game", "sequence_number"]
        constraints = [
            models.UniqueConstraint(
                fields=["game", "sequence_number"], name="move_unique_sequence"
            ),
            models.UniqueConstraint(
                fields=["game", "row", "col"], name="move_unique_cell"
            ),
            models.CheckConstraint(
                condition=Q(row__gte=0, row__lte=2, col__gte=0, col__lte=2),
                name="move_cell_on_board",
            ),
            models.CheckConstraint(
                condition=Q(sequence_number__gte=1, sequence_number__lte=rules.CELLS),
                name="move_sequence_range",
            ),
            models.CheckConstraint(
                condition=Q(player__in=MarkChoice.values), name="move_player_valid"
            ),
            models.CheckConstraint(
                condition=Q(player=MarkChoice.X, sequence_number__in=[1, 3, 5, 7, 9])
                | Q(player=MarkChoice.O, sequence_number__in=[2, 4, 6, 8]),
                name="move_players_alternate",
            ),
        ]

    def __str__(self) -> str:
        return (
            f"Move {self.sequence_number} of game {self.game_id}: "
            f"{self.player} at ({self.row}, {self.col})"
        )


class PlayerResult(models.Model):
    """One row per player per finished game, written by games.services in the
    transaction that ends the game. Records, streaks and the archive are index
    scans over this table instead of ORs over both sides of every Game.

    A game against yourself gets one row, outcome SELF_PLAY and no mark: it is
    listed but stays out of the record. An aborted game gets outcome ABORTED
    (listed, counted nowhere): one row per player, no opponent if nobody had
    joined. Rows are numbered in the order games end, so `-id` is "most recent
    first" and the archive pages by id."""

    player = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="results"
    )
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="results")
    opponent = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="+",
        null=True,
        blank=True,
    )
    mark = models.CharField(max_length=1, choices=MarkChoice.choices, blank=True)
    outcome = models.CharField(max_length=16, choices=ResultOutcome.choices)

    objects = PlayerResultQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [
            models.Index(fields=["player", "-id"], name="result_recent"),
            models.Index(fields=["player", "outcome", "-id"], name="result_by_outcome"),
            models.Index(
                fields=["player", "opponent", "-id"], name="result_by_opponent"
            ),
            # "Lost" (a loss or a forfeit) and "counted" (not self-play or
            # aborted) are
            # two-value filters: partial indexes keep them ordered range scans.
            models.Index(
                fields=["player", "-id"],
                name="result_losses",
                condition=Q(outcome__in=[ResultOutcome.LOSS, ResultOutcome.FORFEIT]),
            ),
            models.Index(
                fields=["player", "-id"],
                name="result_counted",
                condition=~Q(outcome__in=UNCOUNTED_OUTCOMES),
            ),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["player", "game"], name="result_unique_player_game"
            ),
            models.CheckConstraint(
                condition=Q(outcome__in=ResultOutcome.values),
                name="result_outcome_valid",
            ),
            models.CheckConstraint(
                # Self-play (aborted or not): no mark, the player is the opponent.
                # An aborted open game: a mark and no opponent. Otherwise a mark
                # and somebody else.
                condition=Q(
                    outcome__in=UNCOUNTED_OUTCOMES, mark="", opponent=F("player")
                )
                | Q(
                    outcome=ResultOutcome.ABORTED,
                    mark__in=MarkChoice.values,
                    opponent__isnull=True,
                )
                | (
                    ~Q(outcome=ResultOutcome.SELF_PLAY)
                    & Q(mark__in=MarkChoice.values, opponent__isnull=False)
                    & ~Q(opponent=F("player"))
                ),
                name="result_self_play_iff_no_mark",
            ),
        ]

    def __str__(self) -> str:
        return f"Game {self.game_id}: {self.outcome} for {self.player_id}"


class PlayerRecord(models.Model):
    """A player's totals, one row per player, kept by games.services in the
    transaction that ends a game (from the same rows as PlayerResult), so the
    player page reads a record in one primary-key lookup however many games
    there are. check_games verifies it against the PlayerResult rows."""

    player = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="game_record",
    )
    # PositiveIntegerField: the database refuses a negative count.
    x_wins = models.PositiveIntegerField(default=0)
    x_losses = models.PositiveIntegerField(default=0)
    x_forfeits = models.PositiveIntegerField(default=0)
    x_draws = models.PositiveIntegerField(default=0)
    o_wins = models.PositiveIntegerField(default=0)
    o_losses = models.PositiveIntegerField(default=0)
    o_forfeits = models.PositiveIntegerField(default=0)
    o_draws = models.PositiveIntegerField(default=0)
    self_play = models.PositiveIntegerField(default=0)

    objects = PlayerRecordQuerySet.as_manager()

    def __str__(self) -> str:
        return f"Record of {self.player_id}"


class Invitation(models.Model):
    """An open game that only the holder of its link may join, not listed among
    open games. The link is the game's id (public: game pages are) and `secret`
    (secrets.token_urlsafe, 256 bits), compared in constant time
    (games.services.invited_game). The secret is kept as it is, not hashed, so
    that the creator's game page can show the link again on any device while
    the game waits; it opens one waiting game and nothing else."""

    game = models.OneToOneField(
        Game, on_delete=models.CASCADE, primary_key=True, related_name="invitation"
    )
    secret = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(Exact(Length("secret"), 43)), name="invitation_secret_43"
            ),
        ]

    def __str__(self) -> str:
        return f"Invitation to game {self.game_id}"

    def get_absolute_url(self) -> str:
        return reverse("invitation", args=[self.game_id, self.secret])


class Block(models.Model):
    """`blocker` accepts no new game from `blocked`: no challenge, no joining
    their open games, no use of their invitation links (games.services). Games
    already running and both records are untouched."""

    blocker = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        verbose_name=gettext_lazy("blocker"),
        related_name="blocks",
    )
    blocked = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        verbose_name=gettext_lazy("blocked player"),
        related_name="blocked_by",
    )
    created_at = models.DateTimeField(gettext_lazy("created"), auto_now_add=True)

    objects = BlockQuerySet.as_manager()

    class Meta:
        verbose_name = gettext_lazy("block")
        verbose_name_plural = gettext_lazy("blocks")
        constraints = [
            models.UniqueConstraint(
                fields=["blocker", "blocked"], name="block_unique_pair"
            ),
            models.CheckConstraint(
                condition=~Q(blocker=F("blocked")), name="block_not_self"
            ),
        ]
        # The lobby asks "who blocked me" (open_to): blocked first.
        indexes = [models.Index(fields=["blocked", "blocker"], name="block_blocked")]

    def __str__(self) -> str:
        return f"{self.blocker_id} blocks {self.blocked_id}"


def _new_site_token() -> str:
    return secrets.token_hex(16)


class SiteIdentity(models.Model):
    """The site's one row: a random token that names it for what every host
    shares by construction, its database, however each host spells DATABASE_URL
    (games.live names its Redis channel after it). Made by the first process
    that asks; with `get_or_create` on the fixed key, hosts racing to make it
    all read the one that won."""

    ONE = 1

    id = models.PositiveSmallIntegerField(primary_key=True, default=ONE)
    token = models.CharField(max_length=32, default=_new_site_token)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(id=1), name="site_identity_one_row")
        ]

    def __str__(self) -> str:
        return self.token

    @classmethod
    def current(cls) -> "SiteIdentity":
        return cls.objects.get_or_create(pk=cls.ONE)[0]
