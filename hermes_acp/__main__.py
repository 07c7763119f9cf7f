"""`python -m hermes_acp`: the same as the `hermes-acp` command."""

import sys

from hermes_acp.cli import main

sys.exit(main())
