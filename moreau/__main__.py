"""``python -m moreau``: the same command line as ``moreau``."""

import sys

from moreau._cli import main

if __name__ == "__main__":
    sys.exit(main())
