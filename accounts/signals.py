"""What accounts tells the apps built on it (accounts imports none of them)."""

from django.dispatch import Signal

# A guest keeps the account (sent with `user`, in keep_account's transaction,
# before the account row is locked): the pages that marked the name as a
# guest's show it plain from now on.
guest_kept = Signal()

# Browsers signed out (sent with `user_ids`): their live streams end.
sessions_ended = Signal()

# A player's data export is assembled (sent with `user`): each receiver returns
# a dict of the sections it adds.
personal_data = Signal()
