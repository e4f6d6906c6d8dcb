"""`python -m calipers`: the same command line as `calipers`."""

from calipers.cli.main import run

# guarded: a judging that starts worker processes (spawn) imports this module in each of them
if __name__ == "__main__":
    run()
