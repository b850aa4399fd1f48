"""games.sql: every statement written out by hand names tables and columns the
models have (their `_meta`), and selects or sets the columns of its list in
games.field_lists, in that order; a row read by hand is converted as the ORM
converts it."""

import re
from datetime import datetime

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import Count, Max, Q, Sum
from django.utils.dateparse import parse_datetime

from games import field_lists, services, sql
from games.models import Game, Move, PlayerRecord, Series

STATEMENTS = {
    name: value
    for name, value in vars(sql).items()
    if name.isupper() and isinstance(value, str)
}
SQL_WORDS = {
    "select", "from", "left", "join", "on", "where", "and", "not", "exists",
    "in", "insert", "into", "values", "returning", "update", "set", "conflict",
    "do", "excluded", "or", "max", "count", "sum",
}  # fmt: skip
TABLES = {model._meta.db_table: model for model in apps.get_models()}


def columns_of(model) -> set[str]:
    return {field.column for field in model._meta.concrete_fields}


def column_list(model, names) -> list[str]:
    return [model._meta.get_field(name).column for name in names]


def wrong_names(statement: str) -> list[str]:
    """The names in `statement` that are no table, or no column of the table
    they refer to (through its alias, or the statement's one table)."""
    statement = re.sub(r"%s|%\(\w+\)s|\b\d+\b", " ", statement)
    wrong = []
    aliases = {}
    for table, alias in re.findall(r"\b(?:FROM|JOIN)\s+(\w+)\s+(\w+)", statement):
        aliases[alias] = table
    targets = re.findall(r"\b(?:INTO|UPDATE)\s+(?!SET\b)(\w+)", statement)
    for table in targets:
        aliases[table] = aliases["excluded"] = table
    wrong += [table for table in aliases.values() if table not in TABLES]
    for alias, column in re.findall(r"\b(\w+)\.(\w+)\b", statement):
        table = aliases.get(alias)
        if table not in TABLES or column not in columns_of(TABLES[table]):
            wrong.append(f"{alias}.{column}")
    rest = re.sub(
        r"\b(?:FROM|JOIN|INTO|UPDATE)\s+(?!SET\b)\w+(?:\s+\w+)?", " ", statement
    )
    rest = re.sub(r"\b\w+\.\w+\b", " ", rest)
    bare = [word for word in re.findall(r"\w+", rest) if word.lower() not in SQL_WORDS]
    if len(targets) == 1 and targets[0] in TABLES:
        own = columns_of(TABLES[targets[0]])
        wrong += [word for word in bare if word not in own]
    else:
        wrong += bare  # with several tables, every column is qualified
    return wrong


def selected(statement: str) -> list[tuple[str, str]]:
    """(alias, column) of each column the statement's SELECT list names
    before its first EXISTS or FROM."""
    head = re.split(r"\b(?:EXISTS|FROM)\b", statement)[0]
    return re.findall(r"\b(\w+)\.(\w+)\b", head)


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_each_name_is_a_table_or_a_column_of_the_models(name):
    assert wrong_names(STATEMENTS[name]) == []


@pytest.mark.parametrize(
    ("statement", "wrong"),
    [
        ("SELECT game.id, game.bored FROM games_game game", ["game.bored"]),
        ("SELECT g.id FROM games_gaem g", ["games_gaem", "g.id"]),
        ("UPDATE games_game SET boards = %s WHERE id = %s", ["boards"]),
        ("INSERT INTO games_move (game, row) VALUES (%s, %s)", ["game"]),
        (
            "SELECT game.id FROM games_game game JOIN auth_user u ON id = 1",
            ["id"],
        ),
    ],
)
def test_the_check_finds_a_wrong_name(statement, wrong):
    """A renamed field, a misspelt table, a field's name for its column."""
    assert wrong_names(statement) == wrong


def test_the_check_covers_every_statement():
    assert sorted(STATEMENTS) == [
        "GAME_PAGE_READ",
        "LOBBY_VERSION",
        "MOVE_INSERT",
        "MOVE_READ",
        "MOVE_UPDATE",
        "RECORD_ADD_ONE",
        "RECORD_ADD_TWO",
    ]
    assert sql.RECORDS_ADD == {1: sql.RECORD_ADD_ONE, 2: sql.RECORD_ADD_TWO}


def test_the_game_page_read_selects_its_lists_in_order():
    user_model = get_user_model()
    players = column_list(user_model, field_lists.PAGE_PLAYER_FIELDS)
    assert selected(sql.GAME_PAGE_READ) == [
        *(("game", c) for c in column_list(Game, field_lists.GAME_PAGE_FIELDS)),
        *(("player_x", column) for column in players),
        *(("player_o", column) for column in players),
        *(("series", c) for c in column_list(Series, field_lists.PAGE_SERIES_FIELDS)),
    ]
    # Then whether each player is a guest.
    select_list = sql.GAME_PAGE_READ.split("\n    FROM")[0]
    assert select_list.count("EXISTS (SELECT 1 FROM accounts_guest") == 2
    # The game's id, then twice each: "waiting" and the viewer's id (the block,
    # then the private game, whose players are the viewer's twice).
    assert re.findall(r"%\((\w+)\)s", sql.GAME_PAGE_READ) == [
        "game",
        "waiting",
        "viewer",
        "waiting",
        "viewer",
        "viewer",
    ]


def test_the_move_read_selects_its_list_then_whether_each_player_is_open():
    assert selected(sql.MOVE_READ) == [
        *(("game", c) for c in column_list(Game, field_lists.MOVE_READ_FIELDS)),
        ("player_x", "is_active"),
        ("player_o", "is_active"),
    ]


def test_the_move_update_sets_the_new_state_where_the_version_is_unchanged():
    sets, where = sql.MOVE_UPDATE.split("SET")[1].split("WHERE")
    assert re.findall(r"(\w+) = %s", sets) == column_list(
        Game, field_lists.STATE_FIELDS
    )
    assert re.findall(r"(\w+) = %s", where) == ["id", "version"]


def test_the_move_insert_writes_its_list():
    listed = re.search(r"\((.*?)\)", sql.MOVE_INSERT).group(1)
    assert listed.split(", ") == column_list(Move, field_lists.MOVE_INSERT_FIELDS)
    values = re.search(r"VALUES \((.*?)\)", sql.MOVE_INSERT).group(1)
    assert values.count("%s") == len(field_lists.MOVE_INSERT_FIELDS)


@pytest.mark.parametrize(("rows", "statement"), sorted(sql.RECORDS_ADD.items()))
def test_the_records_write_adds_each_counter(rows, statement):
    columns = column_list(PlayerRecord, field_lists.RECORD_FIELDS)
    listed = re.search(r"\((.*?)\)", statement, re.DOTALL).group(1)
    assert re.split(r",\s+", listed) == columns
    values = re.findall(r"\((%s(?:, %s)*)\)", statement)
    assert [value.count("%s") for value in values] == [len(columns)] * rows
    key = PlayerRecord._meta.pk.column
    assert f"ON CONFLICT ({key}) DO UPDATE SET" in statement
    added = re.findall(
        r"(\w+) = games_playerrecord\.(\w+) \+ excluded\.(\w+)", statement
    )
    assert added == [(column, column, column) for column in columns[1:]]


# -- rows read by hand ------------------------------------------------------------


def test_a_row_read_by_hand_is_converted_as_the_orm_converts_it(alice, game):
    """A timestamp comes back aware on SQLite too (its driver gives a naive
    one), a boolean as a bool: without the converters both would differ."""
    statement = """
        SELECT game.created_at, player_x.is_active, player_x.date_joined,
               game.finished_at, EXISTS (SELECT 1 FROM games_game)
        FROM games_game game
        JOIN auth_user player_x ON player_x.id = game.player_x_id
        WHERE game.id = %s
    """
    user_model = get_user_model()
    read = sql.read_row(
        statement,
        [game.pk],
        sql.Selected(
            (Game, ["created_at"]),
            (user_model, ["is_active", "date_joined"]),
            (Game, ["finished_at"]),
            None,
        ),
    )
    stored = Game.objects.select_related("player_x").get(pk=game.pk)
    created_at, is_active, date_joined, finished_at, exists = read
    assert created_at == stored.created_at
    assert isinstance(created_at, datetime)
    assert created_at.tzinfo is not None
    assert date_joined == stored.player_x.date_joined
    assert date_joined.tzinfo is not None
    assert is_active is True
    assert finished_at is None
    assert exists in (1, True)  # no field: as the driver gives it


def test_no_row_reads_as_none(db):
    assert sql.read_row(sql.MOVE_READ, [0], sql.Selected()) is None


def test_the_converters_are_found_once_per_connection(alice, game, monkeypatch):
    selected_columns = sql.Selected((Game, ["created_at"]))
    sql.read_row("SELECT created_at FROM games_game", [], selected_columns)
    asked = []
    found = connection.ops.get_db_converters
    monkeypatch.setattr(
        connection.ops, "get_db_converters", lambda *a: asked.append(a) or found(*a)
    )
    again = sql.read_row("SELECT created_at FROM games_game", [], selected_columns)
    assert asked == []
    assert again[0] == Game.objects.get(pk=game.pk).created_at


def test_services_run_the_statements_of_this_module(alice, game):
    """The move runs sql.MOVE_READ, MOVE_UPDATE and MOVE_INSERT as they are."""
    ran = []

    def record(execute, statement, params, many, context):
        ran.append(statement)
        return execute(statement, params, many, context)

    with connection.execute_wrapper(record):
        services.play_move(game_id=game.pk, user=alice, row=1, col=1)
    assert [s for s in ran if s in STATEMENTS.values()] == [
        sql.MOVE_READ,
        sql.MOVE_UPDATE,
        sql.MOVE_INSERT,
    ]


def test_the_lobby_version_reads_the_viewers_games_and_the_open_ones(
    alice, bob, carol, game
):
    """Each term over the viewer's games of every status and everyone's open
    games, as the ORM's aggregate reads them; a stranger's running game is not
    among them."""
    services.play_move(game_id=game.pk, user=alice, row=0, col=0)
    open_game = services.create_game(creator=carol)
    services.create_game(creator=bob, opponent=carol)  # a stranger's game
    mine = Game.objects.filter(
        Q(player_x=alice) | Q(player_o=alice) | Q(status="waiting")
    )
    assert set(mine.values_list("id", flat=True)) == {game.pk, open_game.pk}
    latest, count, versions, last_id, ids = Game.objects.lobby_version(alice)
    expected = mine.aggregate(
        latest=Max("updated_at"),
        count=Count("id"),
        versions=Sum("version"),
        last_id=Max("id"),
        ids=Sum("id"),
    )
    assert (count, versions, last_id, ids) == (
        2,
        expected["versions"],
        open_game.pk,
        game.pk + open_game.pk,
    )
    assert expected["versions"] == 3  # 1 + 1 for the move, 1 for the open game
    # As the driver gives it: a datetime on PostgreSQL, its text (UTC) on SQLite.
    read = parse_datetime(str(latest)).replace(tzinfo=None)
    assert read == expected["latest"].replace(tzinfo=None)
