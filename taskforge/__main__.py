"""`python -m taskforge`: the same CLI as the `taskforge` command."""
from taskforge.cli import main

main()
