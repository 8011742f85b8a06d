"""``python -m mpsim``: the same as the ``mpsim`` command."""

from .cli import main

if __name__ == "__main__":  # guarded: sweep workers re-import this module when spawned
    raise SystemExit(main())
