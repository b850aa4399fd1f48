"""Date and time formats where Django's own lack one (FORMAT_MODULE_PATH): a
language's module here is read first, Django's for every name it does not set."""
