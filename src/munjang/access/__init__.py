"""Who may do what on a server: scoped API keys kept hashed in a keys file (`keys.py`), and the
grant a request carries once its key is known (`grants.py`)."""

from __future__ import annotations

from .grants import SCOPES, Grant, Scope
from .keys import KeyFileError, KeyRecord, KeyRing, create_key, list_keys, revoke_key

__all__ = [
    "SCOPES",
    "Grant",
    "KeyFileError",
    "KeyRecord",
    "KeyRing",
    "Scope",
    "create_key",
    "list_keys",
    "revoke_key",
]
