"""The project's own assertion helpers while a proposal runs, shared by
copies.py (which finds them: `assert_helpers`) and copy_raises.py (which
exchanges inputs of their calls), without an import between the two."""
from __future__ import annotations

import types
from collections.abc import Mapping
from contextvars import ContextVar

# name -> (its parameters after self, those compared for equality in its body)
Helpers = Mapping[str, tuple[tuple[str, ...], frozenset[str]]]
HELPERS: ContextVar[Helpers] = ContextVar("assert_helpers", default=types.MappingProxyType({}))
