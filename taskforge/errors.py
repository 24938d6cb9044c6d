"""Error types. Each carries a one-line message fit for the CLI.

UserError: the input is wrong (missing repo, no tests, red suite, corrupt task).
InfraError: the machinery failed (no Docker engine, image build failed, timeout
in setup). A trainer masks InfraError instead of rewarding 0.
"""


class TaskforgeError(Exception):
    exit_code = 2

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message.splitlines()[0] if message else type(self).__name__


class UserError(TaskforgeError):
    exit_code = 2


class InfraError(TaskforgeError):
    """`retry` False: trying again cannot help (a missing image, an unusable
    tree), so a grader says so at once instead of sleeping between attempts."""
    exit_code = 3

    def __init__(self, message: str, retry: bool = True):
        super().__init__(message)
        self.retry = retry
