"""`python -m calipers`: the same command line as `calipers`."""

from calipers.cli.main import run

run()
