"""`python -m taskforge`: the same CLI as the `taskforge` command."""
from taskforge.cli import app

app(prog_name="taskforge")
