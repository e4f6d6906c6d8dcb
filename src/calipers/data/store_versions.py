"""What a store's schema migrations say about the calipers that may use it: one made by an older
calipers is upgraded by a write and refused by a read (`OutdatedStoreError`); one a newer calipers
migrated is never written, and read only where its newer migrations are declared readable
(`NewerStoreError`, `refuse_newer`). The migrations themselves are in `calipers.data.migrations`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from calipers.data import migrations
from calipers.errors import InputError


class OutdatedStoreError(InputError):
    """A read-only open of a store made by an older calipers: it lacks migrations, and reading
    never applies them (exit 1). `pending` names them, in order."""

    def __init__(self, path: Path, pending: Sequence[str]) -> None:
        self.path = path
        self.pending = list(pending)
        n = len(self.pending)
        super().__init__(
            f"the store {path} was made by an older calipers: it lacks {n} schema migration"
            f"{'s' if n != 1 else ''} ({', '.join(self.pending)}), and a read-only command "
            "does not change the store",
            hint=f"Run `calipers migrate --db {path}` (or any command that writes, such as "
            "`calipers import`) to upgrade it.",
        )


class NewerStoreError(InputError):
    """A store a newer calipers migrated: it records schema migrations this calipers does not
    know (`unknown`), so it is never written, and read only where they are declared readable
    (`migrations.READABLE_SUFFIX`) (exit 1)."""

    def __init__(self, path: Path, unknown: Sequence[str], *, writing: bool) -> None:
        from calipers.version import calipers_version

        self.path = path
        self.unknown = list(unknown)
        n = len(self.unknown)
        doing = (
            "writing to it could leave it broken for the calipers that made it"
            if writing
            else "its schema may have changed in ways this calipers would misread"
        )
        super().__init__(
            f"the store {path} needs a newer calipers: it has {n} schema migration"
            f"{'s' if n != 1 else ''} this calipers ({calipers_version()}) does not know "
            f"({', '.join(self.unknown)}; the newest this one knows is "
            f"{migrations.MIGRATIONS[-1][0]}), and {doing}",
            hint="Upgrade calipers (`pip install -U calipers`) to use this store; this one "
            + ("does not write to it." if writing else "does not read it."),
        )


def refuse_newer(path: Path, con: duckdb.DuckDBPyConnection, *, writing: bool) -> None:
    """NewerStoreError for a store with migrations this calipers does not know, unless it is
    only read and each of them is declared readable."""
    names = migrations.unknown(con)
    if names and (writing or not migrations.readable(names)):
        raise NewerStoreError(path, names, writing=writing)
