"""The two login backends (Django's, and allauth's by username in any casing),
each loading the signed-in user with whether they are a guest in the same
query (a LEFT JOIN on accounts.Guest): every page shows a guest's name marked
and hides what guests may not do (accounts.guests), at no query of its own.

Sessions started before these two carry Django's and allauth's own backend
paths, listed after them in AUTHENTICATION_BACKENDS so that those sessions stay
signed in. Those two only read sessions: a login no backend here accepted stops
at the second one (PermissionDenied, Django's documented way to end the chain),
so a failed login hashes the password as often as before, not twice as often."""

from allauth.account import auth_backends
from django.contrib.auth import backends, get_user_model
from django.core.exceptions import PermissionDenied


def _user_with_guest(backend, user_id):
    """ModelBackend.get_user, with the guest row (or its absence) loaded."""
    users = get_user_model()._default_manager.select_related("guest")
    try:
        user = users.get(pk=user_id)  # get(), not first(): no ORDER BY to build
    except users.model.DoesNotExist:
        return None
    return user if backend.user_can_authenticate(user) else None


class ModelBackend(backends.ModelBackend):
    def get_user(self, user_id):
        return _user_with_guest(self, user_id)


class AuthenticationBackend(auth_backends.AuthenticationBackend):
    def authenticate(self, request, **credentials):
        user = super().authenticate(request, **credentials)
        if user is None:
            raise PermissionDenied  # the backends listed after only read sessions
        return user

    def get_user(self, user_id):
        return _user_with_guest(self, user_id)
