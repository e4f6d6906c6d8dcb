"""The Ray that calipers' Ray work runs on — `--executor ray`, `--executor ray-data` and the Ray
Data summaries (`compare --engine ray`) — found or started in one way: a Ray already initialised
in this process (a caller's, a test's) is used as it is; otherwise the cluster at the address
given (or RAY_ADDRESS); otherwise a private local instance, started here and stopped by the
caller, never a stray instance found on disk. Here, below `running`, so that the data layer's
engine and the executors share it."""

from __future__ import annotations

from typing import Any

from calipers.errors import InputError

LOCAL_OBJECT_STORE_BYTES = 256 * 1024**2  # outputs pass through it; Ray's default is 30% of RAM


def import_ray(flag: str) -> Any:
    """The `ray` module, or an error saying how to install it (`flag`: the option that needs it)."""
    try:
        import ray
    except ImportError:
        raise InputError(
            f"{flag} needs Ray, which is not installed",
            hint="pip install ray into calipers' environment, or reinstall calipers with "
            "its extra from a checkout: pip install '/path/to/calipers[ray]' (or run without "
            f"{flag}).",
        ) from None
    return ray


def connect_ray(
    ray: Any, address: str | None, *, num_cpus: int, flag: str,
    object_store_bytes: int = LOCAL_OBJECT_STORE_BYTES,
) -> bool:  # fmt: skip
    """Connect to the Ray at `address` (None: start a private local instance with `num_cpus` and
    `object_store_bytes`). True when this call started Ray, which the caller then shuts down."""
    if ray.is_initialized():
        return False
    options: dict[str, Any] = {
        "include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR",
    }  # fmt: skip
    if address is None:  # "local": a private instance, never a stray one found on disk
        options |= {"address": "local", "num_cpus": num_cpus,
                    "object_store_memory": object_store_bytes}  # fmt: skip
    else:
        options["address"] = address
    try:
        ray.init(**options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise InputError(
            f"could not start or reach Ray ({address or 'local'}): {exc}",
            hint="Check --ray-address / RAY_ADDRESS (e.g. ray://head:10001), or run "
            f"without {flag}.",
        ) from None
    return True
