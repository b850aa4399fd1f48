"""games.field_lists against the models: each list names fields that exist, in
the order its query needs, and the lists meant to hold every field of a kind
hold every one, so a field added, renamed or removed fails here."""

from django.contrib.auth import get_user_model
from django.db import models

from games import field_lists
from games.models import Game, Move, PlayerRecord, Series
from games.presentation import display_name
from games.result_rows import COUNTERS


def attnames(model, *, but=()) -> tuple[str, ...]:
    return tuple(
        field.attname
        for field in model._meta.concrete_fields
        if field.name not in but and field.attname not in but
    )


def in_model_order(model, names) -> list[str]:
    return [name for name in attnames(model) if name in names]


def test_a_game_page_reads_every_field_of_the_game_but_the_timestamps():
    timestamps = [
        field.name
        for field in Game._meta.concrete_fields
        if isinstance(field, models.DateTimeField)
    ]
    assert timestamps == ["created_at", "updated_at", "finished_at"]
    assert attnames(Game, but=timestamps) == field_lists.GAME_PAGE_FIELDS


def test_a_game_page_reads_of_each_player_their_key_name_and_whether_open():
    user_model = get_user_model()
    wanted = {user_model._meta.pk.attname, user_model.USERNAME_FIELD, "is_active"}
    assert tuple(in_model_order(user_model, wanted)) == field_lists.PAGE_PLAYER_FIELDS
    assert len(field_lists.PAGE_PLAYER_FIELDS) == 3


def test_a_game_page_reads_the_whole_series():
    assert attnames(Series) == field_lists.PAGE_SERIES_FIELDS


def test_a_move_reads_fields_of_the_game_in_the_models_order():
    """Game.from_db places a partial row by the model's field order."""
    names = field_lists.MOVE_READ_FIELDS
    assert list(names) == in_model_order(Game, names)
    assert len(names) == 9  # each one a field of the model


def test_a_new_state_writes_fields_of_the_game():
    for name in field_lists.STATE_FIELDS:
        Game._meta.get_field(name)
    assert "version" in field_lists.STATE_FIELDS
    assert "updated_at" in field_lists.STATE_FIELDS  # auto_now, set by hand


def test_a_move_inserts_every_field_of_its_row_but_the_id():
    assert (
        tuple(
            field.name for field in Move._meta.concrete_fields if not field.primary_key
        )
        == field_lists.MOVE_INSERT_FIELDS
    )


def test_the_locked_row_is_the_whole_game_and_its_players_name_and_state():
    players = ("player_x", "player_o")
    assert (
        *(f.name for f in Game._meta.concrete_fields if f.name not in players),
        "player_x__username",
        "player_x__is_active",
        "player_o__username",
        "player_o__is_active",
    ) == field_lists.LOCKED_FIELDS


def test_the_records_write_sets_the_player_then_every_counter():
    assert ("player", *COUNTERS) == field_lists.RECORD_FIELDS
    assert (
        tuple(field.name for field in PlayerRecord._meta.concrete_fields)
        == field_lists.RECORD_FIELDS
    )


def test_a_game_row_loads_what_lists_show_in_one_query(
    alice, bob, game, django_assert_num_queries
):
    """Every path resolves (the ORM refuses a wrong one), and a row shows its
    players' names, marked, without a query more."""
    rows = Game.objects.select_related(*field_lists.GAME_ROW_PLAYERS).only(
        *field_lists.GAME_ROW_FIELDS
    )
    with django_assert_num_queries(1):
        row = rows.get(pk=game.pk)
        names = (display_name(row.player_x), display_name(row.player_o))
        shown = (*names, row.status, row.board)
    assert shown == ("alice", "bob", "in_progress", "---------")
