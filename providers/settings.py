"""Reading settings from the environment, shared by config.py and the providers' own
settings readers: typed values, secrets that production requires and checks, and
provider base URLs that production requires over TLS."""

from __future__ import annotations

from collections.abc import Mapping


class ConfigError(RuntimeError):
    """A required setting is missing or malformed; raised at start-up."""


def number(env: Mapping[str, str], name: str, default: float) -> float:
    """A number setting; its default when unset; ConfigError naming it when malformed."""
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None


def integer(
    env: Mapping[str, str],
    name: str,
    default: int,
    *,
    low: int | None = None,
    high: int | None = None,
    why: str = "",
) -> int:
    """An integer setting; its default when unset; ConfigError naming it when malformed
    or outside low..high (`why` says what the bounds protect)."""
    raw = env.get(name)
    if raw is None or raw == "":
        value = default
    else:
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = (
            f"at least {low}"
            if high is None
            else f"at most {high}"
            if low is None
            else f"{low} to {high}"
        )
        raise ConfigError(f"{name} must be {bounds}{f' ({why})' if why else ''}, got {value}")
    return value


def secret(
    env: Mapping[str, str],
    name: str,
    dev_default: str,
    *,
    is_production: bool,
    dev_secrets: frozenset[str],
    min_bytes: int = 1,
) -> str:
    """The secret `name`; outside production its development default when unset. In
    production it is required, must not be any development secret, and has a length."""
    value = env.get(name, "")
    if not is_production:
        return value or dev_default
    if not value.strip():
        raise ConfigError(
            f"{name} is not set. It is required when APP_ENV=production; "
            "set it in the environment (never in a file in the repository)."
        )
    if value in dev_secrets or value.strip() in dev_secrets:
        raise ConfigError(f"{name} is a development default; production needs its own secret.")
    if len(value.strip().encode()) < min_bytes:
        raise ConfigError(f"{name} must be at least {min_bytes} bytes (random, not a word).")
    return value


def provider_base(
    env: Mapping[str, str],
    name: str,
    default: str,
    *,
    is_production: bool,
    production_default: str | None = None,
) -> str:
    """A provider's base URL (its production default there, when it has one); production
    talks to providers over https only."""
    if is_production and production_default is not None:
        default = production_default
    value = env.get(name, default)
    if (
        is_production
        and not value.lower().startswith("https://")
        and env.get("ALLOW_INSECURE_PROVIDER_URLS", "") != "1"
    ):
        raise ConfigError(
            f"{name}={value!r} is not https: production talks to providers over TLS only "
            "(ALLOW_INSECURE_PROVIDER_URLS=1 allows it, for a test environment)."
        )
    return value


def provider_weights(env: Mapping[str, str], providers: list[str], default: str) -> dict[str, int]:
    """PAYMENTS_PROVIDER_WEIGHTS as {provider: weight}: every enabled provider named, the
    default provider 1 and the others 0 when it is unset (services/payments/routing.py)."""
    if env.get("PAYMENTS_FAILOVER_PROVIDER"):
        raise ConfigError(
            "PAYMENTS_FAILOVER_PROVIDER is gone: a card token is its provider's own, so a "
            "payment never moves to another provider. Remove it; PAYMENTS_PROVIDER_WEIGHTS "
            "shares new payments out when the payment page is rendered."
        )
    given = [i.strip() for i in env.get("PAYMENTS_PROVIDER_WEIGHTS", "").split(",") if i.strip()]
    weights = {name: 0 for name in providers}
    if not given and default:
        weights[default] = 1  # unset: every page offers the default provider
    for item in given:
        name, _, raw = item.partition("=")
        name = name.strip()
        if name not in providers or not raw.strip().isdigit():
            raise ConfigError(
                f"PAYMENTS_PROVIDER_WEIGHTS: {item!r} is not <provider>=<whole number> "
                f"for one of PAYMENTS_PROVIDERS={','.join(providers)}"
            )
        weights[name] = int(raw)
    if providers and not any(weights.values()):
        raise ConfigError("PAYMENTS_PROVIDER_WEIGHTS gives every provider 0: nothing is offered")
    return weights
