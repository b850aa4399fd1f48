"""Record the sessions that were signed in before allauth.usersessions kept a
list (it records logins from now on): without this, "Sign out all other
browsers" would miss them. Their address and browser were never recorded."""

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.db import migrations
from django.utils import timezone

UNRECORDED_ADDRESS = "0.0.0.0"  # accounts.user_sessions.UNRECORDED_ADDRESS


def record_existing_sessions(apps, schema_editor):
    Session = apps.get_model("sessions", "Session")
    UserSession = apps.get_model("usersessions", "UserSession")
    User = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    known = set(UserSession.objects.values_list("session_key", flat=True))
    users = set(User.objects.values_list("pk", flat=True))
    decode = SessionStore().decode
    now = timezone.now()
    rows = []
    for key, data in (
        Session.objects.filter(expire_date__gt=now)
        .values_list("session_key", "session_data")
        .iterator()
    ):
        try:
            user_id = int(decode(data).get(SESSION_KEY, ""))
        except ValueError:
            continue  # not logged in
        if key not in known and user_id in users:
            rows.append(
                UserSession(
                    user_id=user_id,
                    session_key=key,
                    ip=UNRECORDED_ADDRESS,
                    user_agent="",
                    created_at=now,
                    last_seen_at=now,
                )
            )
    UserSession.objects.bulk_create(rows, batch_size=1000)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_username_key"),
        ("sessions", "0001_initial"),
        ("usersessions", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(record_existing_sessions, migrations.RunPython.noop)
    ]
