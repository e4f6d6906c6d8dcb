from calipers.cli.main import cli  # noqa: F401
