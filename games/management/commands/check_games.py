from django.core.management.base import BaseCommand, CommandError

from games.integrity import all_violations, record_violations
from games.models import Game


class Command(BaseCommand):
    help = (
        "Replay every stored game, check the player records, and report any "
        "broken invariant (exit 1 if any)."
    )

    def handle(self, *args, **options):
        problems = 0
        for game_id, problem in all_violations():
            problems += 1
            self.stdout.write(f"game {game_id}: {problem}")
        for player_id, problem in record_violations():
            problems += 1
            self.stdout.write(f"player {player_id}: {problem}")
        total = Game.objects.count()
        if problems:
            raise CommandError(f"{problems} problem(s) found in {total} game(s).")
        self.stdout.write(
            self.style.SUCCESS(f"{total} game(s) checked: all consistent.")
        )
