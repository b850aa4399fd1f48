"""Each player's language and time zone (accounts.models.Preferences): a new
table, its language held to the ones the site ships by a check constraint."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0007_guest_last_active_at'),
        ('auth', '0012_alter_user_first_name_max_length'),
    ]

    operations = [
        migrations.CreateModel(
            name='Preferences',
            fields=[
                ('user', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='preferences', serialize=False, to=settings.AUTH_USER_MODEL)),
                ('language', models.CharField(blank=True, choices=[('en', 'English'), ('fr', 'Français'), ('de', 'Deutsch'), ('es', 'Español'), ('pt-br', 'Português (Brasil)'), ('ar', 'العربية')], max_length=7, verbose_name='language')),
                ('time_zone', models.CharField(blank=True, max_length=64, verbose_name='time zone')),
            ],
            options={
                'verbose_name': 'preferences',
                'verbose_name_plural': 'preferences',
                'constraints': [models.CheckConstraint(condition=models.Q(('language__in', ['', 'en', 'fr', 'de', 'es', 'pt-br', 'ar'])), name='accounts_preferences_language_offered')],
            },
        ),
    ]
