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
    exit_code = 3
