"""Settings: one flat table of keys, loaded from defaults, the global config, the
project's `swival.toml`, `SWIVAL_*` environment variables and the command line,
in increasing order of precedence.

Every key is validated: an unknown key, a value of the wrong type or out of range, or
keys that contradict each other raise `ConfigError` naming the source, the key and what
was expected; every problem of every source is reported in that one error.

The project's `swival.toml` is the one source the user did not write: its keys marked
`trusted_only` apply only when the caller's `trusted` check allows them (project trust).

keys.py holds the schema (`Key`, `KEYS`, `Settings`), values.py checks one value against
its key, loading.py reads and merges the sources and decides what waits for trust, and
secrets.py names what must never be shown. The rest of Swival imports from here.
"""

from swival.config.keys import KEYS, KEYS_BY_NAME, Key, Settings, selects_hosted
from swival.config.loading import (
    TrustCheck,
    find_project_root,
    global_config_path,
    load_settings,
    read_toml,
    requested_output_format,
    user_state_dir,
)
from swival.config.secrets import (
    is_secret_name,
    known_secrets,
    literal_key_warning,
    named_secrets,
    redactor_for,
)
from swival.config.values import coerce, public_value

__all__ = [
    "KEYS", "KEYS_BY_NAME", "Key", "Settings", "TrustCheck", "coerce", "find_project_root",
    "global_config_path", "is_secret_name", "known_secrets", "literal_key_warning",
    "load_settings", "named_secrets", "public_value", "read_toml", "redactor_for",
    "requested_output_format", "selects_hosted", "user_state_dir",
]
