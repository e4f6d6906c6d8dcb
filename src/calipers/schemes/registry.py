"""Schemes registered by name. Built-in schemes register on import; third-party packages add theirs
through the `calipers.schemes` entry-point group (the entry point names a Scheme subclass)."""

from __future__ import annotations

import importlib
import threading
from importlib.metadata import entry_points

from calipers.errors import InputError
from calipers.schemes.base import Scheme

ENTRY_POINT_GROUP = "calipers.schemes"
# Each built-in scheme's name and the module that registers it: asking for one scheme imports
# only its module (and the plugins), not every scheme's (0.65 s of imports on a 2-core machine:
# the layered scheme brings the sequential engine and scipy.special).
_BUILTIN_MODULES = {
    "reasonscore": "calipers.schemes.reasonscore",
    "layered": "calipers.schemes.layered",
    "metric": "calipers.schemes.metric",
    "rubric": "calipers.schemes.rubric",
    "objective": "calipers.schemes.objective",
    "robustness": "calipers.schemes.robustness",
}
_REGISTRY: dict[str, type[Scheme]] = {}
_loaded = False
_loading = False
_plugins_loaded = False
_LOAD_LOCK = threading.RLock()


def register(cls: type[Scheme]) -> type[Scheme]:
    """Class decorator: make a scheme available by its `name`."""
    existing = _REGISTRY.get(cls.name)
    if existing is not None and existing is not cls:
        raise InputError(f"two schemes are registered as '{cls.name}': {existing} and {cls}")
    _REGISTRY[cls.name] = cls
    return cls


def _load_all() -> None:
    # One thread loads; another asking meanwhile (`calipers view` warms the schemes up on a
    # thread while a page may ask for one) waits for it instead of finding half a registry. A
    # module that asks for a scheme while it is being imported (the same thread) is not made
    # to load it again.
    global _loaded, _loading
    with _LOAD_LOCK:
        if _loaded or _loading:
            return
        _loading = True
        try:
            _load_modules()
        finally:
            _loaded, _loading = True, False


def _load_modules() -> None:
    for module in _BUILTIN_MODULES.values():
        importlib.import_module(module)
    _load_plugins()


def _load_plugins() -> None:
    global _plugins_loaded
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            cls = ep.load()
        except Exception as exc:  # a broken plugin must not take the built-ins down with it
            raise InputError(
                f"the scheme plugin '{ep.name}' ({ep.value}) failed to load: {exc}",
                hint="Reinstall or remove the package that provides it.",
            ) from exc
        if not (isinstance(cls, type) and issubclass(cls, Scheme)):
            raise InputError(f"the entry point '{ep.name}' ({ep.value}) is not a Scheme subclass")
        register(cls)
    _plugins_loaded = True


def available() -> dict[str, type[Scheme]]:
    """Every registered scheme by name, sorted."""
    _load_all()
    return dict(sorted(_REGISTRY.items()))


def get_scheme(name: str) -> Scheme:
    """An instance of the scheme called `name`; an unknown name is an input error."""
    module = _BUILTIN_MODULES.get(name)
    if module is not None and not _loaded:
        with _LOAD_LOCK:  # the plugins too: one registering a built-in's name is an error
            importlib.import_module(module)
            if not _plugins_loaded:
                _load_plugins()
        if name in _REGISTRY:
            return _REGISTRY[name]()
    schemes = available()
    if name not in schemes:
        raise InputError(
            f"unknown scheme '{name}'",
            hint=f"Available schemes: {', '.join(schemes) or '(none)'}.",
            parameters=["scheme"],
        )
    return schemes[name]()
