"""When saving a user tells the live layer that their sessions may have ended
(games.live.accounts): a changed password or a deactivation, however saved,
publishes one AccountChanged after commit; a save that changes neither
publishes nothing, and the login's last_login costs no query of its own.
What the streams then do is tests/games/test_stream_sessions.py."""

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from games import live
from games.live import AccountChanged

pytestmark = pytest.mark.django_db


@pytest.fixture
def published(monkeypatch):
    sent = []
    monkeypatch.setattr(live, "publish", sent.append)
    return sent


def test_a_changed_password_is_published(
    published, django_capture_on_commit_callbacks, alice
):
    alice.set_password("a-new-password-after-the-login")
    with django_capture_on_commit_callbacks(execute=True):
        alice.save()
    assert published == [AccountChanged(alice.pk)]


def test_a_password_changed_on_another_copy_of_the_user_is_published(
    published, django_capture_on_commit_callbacks, alice
):
    """Compared with the stored row: a copy loaded before the change saves
    the new password over the old one."""
    copy = get_user_model().objects.get(pk=alice.pk)
    copy.set_password("a-new-password-after-the-login")
    with django_capture_on_commit_callbacks(execute=True):
        copy.save(update_fields=["password"])
    assert published == [AccountChanged(alice.pk)]


def test_a_deactivation_is_published(
    published, django_capture_on_commit_callbacks, alice
):
    alice.is_active = False
    with django_capture_on_commit_callbacks(execute=True):
        alice.save()
    assert published == [AccountChanged(alice.pk)]


def test_a_save_that_changes_neither_publishes_nothing(
    published, django_capture_on_commit_callbacks, alice
):
    user = get_user_model().objects.get(pk=alice.pk)
    user.first_name = "Alice"
    with django_capture_on_commit_callbacks(execute=True):
        user.save()
    assert published == []


def test_the_logins_last_login_costs_no_query_and_publishes_nothing(
    published, django_capture_on_commit_callbacks, django_assert_num_queries, alice
):
    alice.last_login = timezone.now()
    with (
        django_capture_on_commit_callbacks(execute=True),
        django_assert_num_queries(1),  # the UPDATE
    ):
        alice.save(update_fields=["last_login"])
    assert published == []


def test_a_new_user_publishes_nothing(
    published, django_capture_on_commit_callbacks, make_user
):
    with django_capture_on_commit_callbacks(execute=True):
        make_user("dave")
    assert published == []
