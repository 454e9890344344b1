"""``python -m phasebench``: the same command line as the ``phasebench`` script."""

import sys

from phasebench.cli import main

sys.exit(main())
