"""The session engines (SESSION_ENGINE): Django's, whose new key (cycle_key:
update_session_auth_hash, a login over a session, a session signed under a
fallback secret key) carries the browser's recorded login along, so the
signed-in browsers list (accounts.user_sessions) shows it and signing it out
ends it. allauth's own login and password pages record new keys too; moving the
row first leaves them nothing to add."""

from allauth.usersessions.models import UserSession


class KeyFollowingStore:
    """A mixin for a database-backed SessionStore."""

    def cycle_key(self) -> None:
        old = self.session_key
        super().cycle_key()
        if old:
            UserSession.objects.filter(session_key=old).update(
                session_key=self.session_key
            )

    async def acycle_key(self) -> None:
        old = self.session_key
        await super().acycle_key()
        if old:
            await UserSession.objects.filter(session_key=old).aupdate(
                session_key=self.session_key
            )
