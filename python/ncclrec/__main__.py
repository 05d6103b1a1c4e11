"""python -m ncclrec COMMAND ...: the same as the `ncclrec` command (cli.py)."""
import sys

from ncclrec.cli import main

sys.exit(main())
