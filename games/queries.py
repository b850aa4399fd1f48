"""The reads pages need, as QuerySet methods on the models' managers
(`Game.objects.for_lobby(user)`): games.models builds its managers from these
classes. They reach other models through relations or the app registry, never
by importing games.models, which imports them.

Queries that need a rule (whose turn, who has moved) derive their SQL from a
helper next to that rule in games.rules; tests check the two against each other.
What the queries load is listed in games.field_lists; the game page's read,
written out by hand, is games.sql's (Game.objects.for_page, in games.models).
"""

from collections import Counter, defaultdict

from django.apps import apps
from django.db import connections, models
from django.db.models import (
    BooleanField,
    Case,
    Count,
    Exists,
    F,
    OuterRef,
    Q,
    Subquery,
    When,
)
from django.db.models.functions import Coalesce

from . import rules, sql
from .choices import UNCOUNTED_OUTCOMES, GameStatus, ResultOutcome
from .field_lists import GAME_ROW_FIELDS, GAME_ROW_PLAYERS, with_guest
from .player_stats import LOSSES, RESULT_FILTERS, ArchivePage, Record, Streak, Tally
from .result_rows import counter_for


def _blocks() -> models.QuerySet:
    """Every Block (games.models, found at call time: it imports this module)."""
    return apps.get_model("games", "Block").objects.all()


class SeriesQuerySet(models.QuerySet):
    def head_to_head(self, player) -> list[tuple[object, int, int, int]]:
        """(opponent, player's wins, opponent's wins, draws) against every
        opponent with a counted game, most games first: one query, one row per
        opponent."""
        series = (
            self.filter(Q(player_a=player) | Q(player_b=player))
            .exclude(player_a=F("player_b"))
            .select_related("player_a", "player_b", *with_guest("player_a", "player_b"))
            .annotate(played=F("a_wins") + F("b_wins") + F("draws"))
            .filter(played__gt=0)
            .order_by("-played", "-id")
        )
        rows = []
        for pair in series:
            mine_is_a = pair.player_a_id == player.pk
            opponent = pair.player_b if mine_is_a else pair.player_a
            wins, losses = (
                (pair.a_wins, pair.b_wins) if mine_is_a else (pair.b_wins, pair.a_wins)
            )
            rows.append((opponent, wins, losses, pair.draws))
        return rows


def _has_not_moved(user) -> Q:
    """SQL for "`user`'s side has made no move yet" (rules.moves_before_first)."""
    return Q(player_x=user, move_count__lte=rules.moves_before_first(rules.Mark.X)) | Q(
        player_o=user, move_count__lte=rules.moves_before_first(rules.Mark.O)
    )


def _opponent_has_not_moved(user) -> Q:
    """SQL for "the side `user` does not play has made no move yet"."""
    return Q(player_x=user, move_count__lte=rules.moves_before_first(rules.Mark.O)) | Q(
        player_o=user, move_count__lte=rules.moves_before_first(rules.Mark.X)
    )


def turn_of(user) -> Q:
    """SQL for rules.to_move: the games in progress in which `user` is to move."""
    return Q(status=GameStatus.IN_PROGRESS) & (
        Q(player_x=user, move_count__in=rules.move_counts_to_move(rules.Mark.X))
        | Q(player_o=user, move_count__in=rules.move_counts_to_move(rules.Mark.O))
    )


def _flag(condition: Q) -> Case:
    return Case(When(condition, then=True), default=False, output_field=BooleanField())


class GameQuerySet(models.QuerySet):
    def of(self, user) -> "GameQuerySet":
        return self.filter(Q(player_x=user) | Q(player_o=user))

    def for_lobby(self, user) -> "GameQuerySet":
        """`user`'s games still running or waiting: theirs to move first, then
        new (someone else started it and `user` has not moved), then the rest.
        Each row carries `my_turn` and `is_new`."""
        return (
            self.of(user)
            .filter(status__in=[GameStatus.IN_PROGRESS, GameStatus.WAITING])
            .select_related(*GAME_ROW_PLAYERS)
            .only(*GAME_ROW_FIELDS)
            .annotate(
                my_turn=_flag(turn_of(user)),
                is_new=_flag(
                    Q(status=GameStatus.IN_PROGRESS, created_by__isnull=False)
                    & ~Q(created_by=user)
                    & _has_not_moved(user)
                ),
            )
            .order_by("-my_turn", "-is_new", "-updated_at", "-id")
        )

    def open_to(self, user) -> "GameQuerySet":
        """Open games `user` could join, newest first: not invitations (only their
        link's holder may join), nor the games of people who blocked `user`."""
        blocked_by = _blocks().filter(blocked=user).values("blocker")
        return (
            self.filter(status=GameStatus.WAITING, invitation__isnull=True)
            .exclude(Q(player_x=user) | Q(player_o=user))
            .exclude(Q(player_x__in=blocked_by) | Q(player_o__in=blocked_by))
            .select_related(*GAME_ROW_PLAYERS)
            .only(*GAME_ROW_FIELDS)
            .order_by("-created_at", "-id")
        )

    def visible_to(self, user) -> "GameQuerySet":
        """The games `user` (None: a visitor) may see: all but the waiting games
        of people who blocked `user`, and but the private games past waiting of
        which `user` is no player (they are not found, as if they did not
        exist); a visitor sees only public games with both players in. The rule
        in the ORM's words: the pages and streams read with sql.GAME_PAGE_READ,
        which tests/games/test_blocking.py holds to this."""
        private = Q(is_private=True) & ~Q(status=GameStatus.WAITING)
        if user is None:
            return self.exclude(private).filter(
                player_x__isnull=False, player_o__isnull=False
            )
        blocked_by_a_player = Exists(
            _blocks()
            .filter(blocked=user)
            .filter(Q(blocker=OuterRef("player_x")) | Q(blocker=OuterRef("player_o")))
        )
        return self.exclude(Q(status=GameStatus.WAITING) & blocked_by_a_player).exclude(
            private & ~Q(player_x=user) & ~Q(player_o=user)
        )

    def lobby_version(self, user) -> tuple:
        """A value that changes whenever `user`'s lobby could: over `user`'s games
        (any status: the lobby lists the running ones and the latest finished) and
        every open game (the open list), one aggregate query, no model instances:
        the largest `updated_at`, the count, the sums of versions and ids, the
        largest id.

        A write to any of these rows sets a new `updated_at` and bumps `version`
        (games.services; settle_games_and_deactivate sets `updated_at` of all the
        leaver's games); a creation or a deletion changes the count. `updated_at` alone
        could miss a change on PostgreSQL, where two games' transactions may
        commit in the other order than their timestamps: the sum of versions
        still moves. A game can only join these rows by being created, so one
        leaving as another arrives (same count; the newcomer's versions and
        timestamp no larger) changes the sum of ids, and usually the largest.
        Each term has an index (player_x, player_o, status) and both databases
        combine them (SQLite's multi-index OR, PostgreSQL's BitmapOr): the query
        reads the viewer's games and the open ones, not the table. Blocking
        or unblocking someone changes which open games they see: it bumps the
        `version` of the blocker's open games (games.services.block_player).

        The statement is written out (sql.LOBBY_VERSION): its values are only
        compared, so they stay as the driver returns them."""
        with connections[self.db].cursor() as cursor:
            cursor.execute(
                sql.LOBBY_VERSION, {"viewer": user.pk, "waiting": GameStatus.WAITING}
            )
            return tuple(cursor.fetchone())

    def waiting_on(self, user) -> "GameQuerySet":
        """Games in progress in which `user` is to move, longest waiting first.
        `updated_at` is when the wait began: the game's last write was what
        made it `user`'s turn (the opponent's move, the join or the creation)."""
        return (
            self.filter(turn_of(user))
            .select_related(*GAME_ROW_PLAYERS)
            .order_by("updated_at", "id")
        )

    def open_by(self, user) -> "GameQuerySet":
        return self.of(user).filter(status=GameStatus.WAITING)

    def unstarted_by(self, creator) -> "GameQuerySet":
        """Games `creator` started against someone else who has not moved yet:
        what the creation limits count (self-play is not limited)."""
        return (
            self.filter(created_by=creator, status=GameStatus.IN_PROGRESS)
            .exclude(player_x=F("player_o"))
            .filter(_opponent_has_not_moved(creator))
        )


class PlayerResultQuerySet(models.QuerySet):
    """A player's history, streak and archive pages: each a bounded index range
    scan over the player's rows (one per finished game), so a page costs the
    same however many games there are."""

    def history(self, player) -> "PlayerResultQuerySet":
        """The player's finished games, newest first, with what each row
        displays (and no other column)."""
        return (
            self.filter(player=player)
            .select_related(
                "game",
                *(f"game__{player}" for player in GAME_ROW_PLAYERS),
                "opponent",
                "opponent__guest",
            )
            .only(
                "player",
                "mark",
                "outcome",
                "opponent__username",
                "opponent__is_active",
                "opponent__guest__user",
                "game__finished_at",
                *(f"game__{field}" for field in GAME_ROW_FIELDS),
            )
        )

    def streak(self, player) -> Streak:
        """The latest counted result, and how many results since the last
        different one: two queries, each bounded by an index range (self-play
        and aborted games do not count, a forfeit is a loss)."""
        counted = self.filter(player=player).exclude(outcome__in=UNCOUNTED_OUTCOMES)
        latest = counted.values_list("outcome", flat=True).first()
        if latest is None:
            return Streak()
        same = LOSSES if latest in LOSSES else [latest]
        last_other = counted.exclude(outcome__in=same).order_by("-id").values("id")[:1]
        length = counted.filter(id__gt=Coalesce(Subquery(last_other), 0)).count()
        return Streak("loss" if latest in LOSSES else latest, length)

    def archive_page(
        self,
        player,
        *,
        result: str = "",
        opponent=None,
        before: int | None = None,
        after: int | None = None,
        size: int = 20,
    ) -> ArchivePage:
        """Keyset pagination on the result id: one query of `size + 1` rows, no
        COUNT. `result` is a key of RESULT_FILTERS (or "" for all)."""
        rows = self.history(player)
        if result:
            rows = rows.filter(outcome__in=RESULT_FILTERS[result][1])
        if opponent is not None:
            rows = rows.filter(opponent=opponent)
        if after is not None:
            page = list(rows.filter(id__gt=after).order_by("id")[: size + 1])
            more = len(page) > size
            page = page[:size][::-1]
            return ArchivePage(
                page,
                newer_than=page[0].pk if more and page else None,
                older_than=page[-1].pk if page else None,
            )
        if before is not None:
            rows = rows.filter(id__lt=before)
        page = list(rows.order_by("-id")[: size + 1])
        more = len(page) > size
        page = page[:size]
        return ArchivePage(
            page,
            newer_than=page[0].pk if before is not None and page else None,
            older_than=page[-1].pk if more else None,
        )

    def counters(self) -> dict[int, Counter]:
        """{player id: {PlayerRecord counter: how many rows add 1 to it}}: the
        tally the services recount records with and check_games verifies."""
        tally: dict[int, Counter] = defaultdict(Counter)
        rows = (
            self.exclude(outcome=ResultOutcome.ABORTED)
            .values_list("player", "mark", "outcome")
            .annotate(count=Count("id"))
            .order_by()
        )
        for player_id, mark, outcome, count in rows:
            tally[player_id][counter_for(mark, outcome)] += count
        return tally


class PlayerRecordQuerySet(models.QuerySet):
    def record_of(self, player) -> Record:
        """One primary-key read of the counters the services keep."""
        row = self.filter(player=player).first()
        if row is None:
            return Record()
        return Record(
            as_x=Tally(row.x_wins, row.x_losses, row.x_forfeits, row.x_draws),
            as_o=Tally(row.o_wins, row.o_losses, row.o_forfeits, row.o_draws),
            self_play=row.self_play,
        )


class BlockQuerySet(models.QuerySet):
    def blocked_by(self, user) -> "BlockQuerySet":
        """The people `user` blocked, most recent first, with their names."""
        return (
            self.filter(blocker=user)
            .select_related("blocked", "blocked__guest")
            .order_by("-created_at", "-id")
        )

    def blocks(self, *, blocker, blocked) -> bool:
        return self.filter(blocker=blocker, blocked=blocked).exists()
