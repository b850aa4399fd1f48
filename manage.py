#!/usr/bin/env python
import os
import sys

from tictactoe_site.lib.env import reports_configuration_errors


@reports_configuration_errors
def main():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tictactoe_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
