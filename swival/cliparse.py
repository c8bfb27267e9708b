"""The command line's parser without pydantic for the values that need no conversion.

Recent typer converts each option's value with a pydantic TypeAdapter, built the first time
the option is parsed, even for an option that was not given (its value None). Importing
pydantic and building the ~40 adapters cost about 70 ms of CPU before any session starts.
`LazyCommand` hands typer's conversion only the values that need it: a missing value, a
string for a text option and strings for a repeatable text option come back as typer's
adapters would return them; a number, a choice or a path still goes through typer.

A typer without these internals (older or newer ones) parses exactly as it always does.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand


class LazyCommand(TyperCommand):
    """A typer command whose options convert their values without pydantic when they can."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        for param in self.get_params(ctx):
            if getattr(param, "_runtime_param", False) is None and hasattr(
                param, "type_descriptor"
            ):
                param._runtime_param = _Deferred(param)  # type: ignore[attr-defined]
        return super().parse_args(ctx, args)


class _Deferred:
    """Stands in for an option's typer converter until a value needs it."""

    def __init__(self, param: Any) -> None:
        self._param = param

    def coerce(self, value: Any, *args: Any, **kwargs: Any) -> Any:
        param = self._param
        descriptor = param.type_descriptor
        annotation = descriptor.annotation
        plain = descriptor.parameter_info.parser is None and descriptor.file_annotation is None
        many = param.multiple or param.nargs == -1
        if value is None:  # typer's own rule for a value not given
            return () if many else None
        if plain and annotation is str and not many and type(value) is str:
            return value
        if (
            plain
            and annotation == list[str]
            and many
            and isinstance(value, list | tuple)
            and all(type(item) is str for item in value)
        ):
            return list(value)
        param._runtime_param = None  # typer builds its converter, as it would have
        return param.get_runtime_param().coerce(value, *args, **kwargs)
