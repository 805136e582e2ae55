"""Errors that are the user's to fix: printed as one line, exit code 2, no traceback."""


class UserError(Exception):
    """Bad input: the message names what is wrong and what is expected."""

    exit_code = 2
