"""The site's identity in its database (games.models.SiteIdentity), which names
its Redis channel (games.live): made once, by whoever asks first, then read;
one row, enforced by the database."""

import re

import pytest
from django.db import IntegrityError

from games.models import SiteIdentity

pytestmark = pytest.mark.django_db


def test_the_first_to_ask_makes_the_token_and_everyone_reads_it():
    assert not SiteIdentity.objects.exists()
    token = SiteIdentity.current().token
    assert re.fullmatch(r"[0-9a-f]{32}", token)
    assert SiteIdentity.current().token == token
    assert list(SiteIdentity.objects.values_list("pk", "token")) == [(1, token)]


def test_the_database_refuses_a_second_row():
    SiteIdentity.current()
    with pytest.raises(IntegrityError, match="site_identity_one_row"):
        SiteIdentity.objects.create(pk=2)
