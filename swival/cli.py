"""Command line: options + config -> the composition root -> one-shot run or REPL.

`swival --help` and `--version` must stay fast: nothing here imports litellm, and the
heavier modules are imported only once a session is actually started. No `from __future__
import annotations` here: typer reads `run`'s annotations at every start, and as strings
it would have to evaluate each one again (a few ms); names only known to the type checker
are quoted instead.
"""

import atexit
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from swival import __version__
from swival.cliparse import LazyCommand
from swival.errors import SwivalError, Terminated, UsageError

if TYPE_CHECKING:
    from swival.config import Settings
    from swival.redaction import Redactor

app = typer.Typer(
    add_completion=True,  # --install-completion, --show-completion
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

EXIT_CODES_HELP = (
    "Exit codes: 0 done, 1 runtime error, 2 usage or config error, 3 provider unreachable or "
    "model missing, 4 turn limit, 5 context exhausted, 130 interrupted (Ctrl-C), 143 terminated "
    "(SIGTERM)."
)


class InitTarget(StrEnum):
    project = "project"
    global_ = "global"
    stdout = "stdout"


class OutputFormat(StrEnum):
    text = "text"
    json = "json"
    stream_json = "stream-json"


def _version(ctx: typer.Context, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        print(f"swival {__version__}")
        raise typer.Exit(0)


Opt = typer.Option


@app.command(cls=LazyCommand, epilog=EXIT_CODES_HELP)
def run(  # noqa: PLR0913 - one parameter per documented option
    task: Annotated[str | None, typer.Argument(help="The task (one-shot). Omit for the REPL.")]
    = None,
    prompt: Annotated[str | None, Opt("--prompt", "-p", help="Run this task one-shot.")] = None,
    provider: Annotated[str | None, Opt(help="lmstudio | ollama | llamacpp | generic")] = None,
    base_url: Annotated[str | None, Opt(help="Server URL (root or its /v1 URL).")] = None,
    model: Annotated[str | None, Opt(help="Model name (default: the loaded one).")] = None,
    api_key: Annotated[str | None, Opt(help="API key, if the server needs one.")] = None,
    max_context_tokens: Annotated[int | None, Opt(help="Context window (default: detected).")]
    = None,
    max_output_tokens: Annotated[int | None, Opt(help="Most tokens per reply [32768].")] = None,
    max_turns: Annotated[int | None, Opt(help="Most model calls per request [100].")] = None,
    temperature: Annotated[float | None, Opt(help="Sampling temperature.")] = None,
    request_timeout: Annotated[float | None, Opt(help="Seconds to wait for a reply to start "
                                                 "[900].")] = None,
    idle_timeout: Annotated[float | None, Opt(help="Seconds a streaming reply may go without "
                                              "new data [600].")] = None,
    retries: Annotated[int | None, Opt(help="Retries on 429/5xx/dropped connections [3].")]
    = None,
    retry_after_max: Annotated[float | None, Opt(help="Longest Retry-After wait honoured "
                                                 "[60].")] = None,
    quiet: Annotated[bool | None, Opt("--quiet/--no-quiet", "-q", help="Only the answer and "
                                      "errors.")] = None,
    json_output: Annotated[bool | None, Opt("--json/--no-json", help="Print one JSON object "
                                            "(--output-format json).")] = None,
    output_format: Annotated[OutputFormat | None, Opt(help="One-shot stdout: text (the "
                                                      "answer), json (one object) or "
                                                      "stream-json (one object per event, a "
                                                      "line each) [text].")] = None,
    yolo: Annotated[bool | None, Opt("--yolo/--no-yolo", help="Allow all commands and "
                                      "fetches of public hosts.")] = None,
    commands: Annotated[str | None, Opt(help="ask | all | none | prog1,prog2")] = None,
    command_timeout: Annotated[int | None, Opt(help="Seconds per command [120].")] = None,
    fetch: Annotated[str | None, Opt(help="URLs fetch_url may reach: ask | all | none | "
                                     "host1,host2:port")] = None,
    add_dir: Annotated[list[str] | None, Opt(metavar="<dir>", help="Extra read/write directory "
                                             "(repeatable).")] = None,
    add_dir_ro: Annotated[list[str] | None, Opt(metavar="<dir>", help="Extra read-only "
                                                "directory (repeatable).")] = None,
    sandbox: Annotated[str | None, Opt(help="Confine commands with bubblewrap: auto | on | "
                                       "off [auto].")] = None,
    allow_net: Annotated[bool | None, Opt("--allow-net/--no-allow-net", help="Let sandboxed "
                                          "commands use the network.")] = None,
    pass_env: Annotated[list[str] | None, Opt(metavar="<name>", help="Let this secret "
                                              "environment variable through to commands "
                                              "(repeatable).")] = None,
    edits: Annotated[str | None, Opt(help="File edits: auto | ask (show each diff and ask) "
                                     "[auto].")] = None,
    read_only: Annotated[bool | None, Opt("--read-only/--no-read-only", help="Offer only "
                                          "tools that change nothing (explain, plan).")] = None,
    subagent_tools: Annotated[str | None, Opt(help="Tools of a subagent (task): read-only | all "
                                              "| tool1,tool2 added to the read-only ones "
                                              "[read-only].")] = None,
    subagent_max_turns: Annotated[int | None, Opt(help="Most model calls of one subagent "
                                                  "[40].")] = None,
    tool_result_share: Annotated[float | None, Opt(help="Max share of the input budget per "
                                                   "tool result [0.2].")] = None,
    compaction_trigger: Annotated[float | None, Opt(help="Compact at this share [0.85].")] = None,
    compaction_target: Annotated[float | None, Opt(help="Compact down to this share [0.55].")]
    = None,
    proactive_summaries: Annotated[bool | None, Opt("--proactive-summaries/"
                                                    "--no-proactive-summaries",
                                                    help="Summarize every 10 turns in the "
                                                    "background, a fallback for compaction "
                                                    "[off].")] = None,
    mcp: Annotated[bool | None, Opt("--mcp/--no-mcp", help="Start the configured MCP servers "
                                    "[on] / run without them.")] = None,
    config: Annotated[Path | None, Opt("--config", help="Config file to use instead of the "
                                       "project's swival.toml.")] = None,
    trust: Annotated[bool | None, Opt("--trust/--untrust", help="Apply the keys of this "
                                      "project's swival.toml that need trust, and remember "
                                      "it / forget that trust and run without them.")] = None,
    continue_: Annotated[bool, Opt("--continue", "-c", help="Resume this project's latest "
                                   "session.")] = False,
    resume: Annotated[str | None, Opt("--resume", help="Resume the session with this id.")]
    = None,
    init_config: Annotated[InitTarget | None, Opt(help="Write a starter config that "
                                                  "documents every key (project: "
                                                  "./swival.toml, global: your config "
                                                  "file) or print it (stdout), and exit.")]
    = None,
    doctor: Annotated[bool, Opt("--doctor", help="Check the setup and exit (also: swival "
                                "doctor).")] = False,
    version: Annotated[bool, Opt("--version", callback=_version, is_eager=True,
                                 help="Print the version and exit.")] = False,
) -> None:
    """Swival: a coding agent for small local models (LM Studio, Ollama, llama.cpp)."""
    if json_output is not None and output_format is not None \
            and output_format.value != ("json" if json_output else "text"):
        flag = "--json" if json_output else "--no-json"
        raise UsageError(f"{flag} and --output-format {output_format.value} ask for different "
                         "output; give one of them (--json is --output-format json, --no-json "
                         "is --output-format text).")
    given = dict(
        provider=provider, base_url=base_url, model=model, api_key=api_key,
        max_context_tokens=max_context_tokens, max_output_tokens=max_output_tokens,
        max_turns=max_turns, temperature=temperature, request_timeout=request_timeout,
        idle_timeout=idle_timeout, retries=retries, retry_after_max=retry_after_max,
        quiet=quiet, json=json_output, yolo=yolo, commands=commands,
        output_format=output_format.value if output_format else None,
        command_timeout=command_timeout, fetch=fetch, add_dir=add_dir or None,
        add_dir_ro=add_dir_ro or None, sandbox=sandbox, allow_net=allow_net,
        pass_env=pass_env or None, edits=edits, read_only=read_only,
        subagent_tools=subagent_tools, subagent_max_turns=subagent_max_turns,
        tool_result_share=tool_result_share, compaction_trigger=compaction_trigger,
        compaction_target=compaction_target, proactive_summaries=proactive_summaries,
        mcp=mcp,
    )
    if prompt is None and task is not None and task.strip().lower() == "doctor":
        task, doctor = None, True  # `swival doctor` (-p doctor gives the model that task)
    raise typer.Exit(_main(Invocation(given, (prompt, task), config, trust, init_config,
                                      doctor, (resume, continue_))))


@dataclass(frozen=True)
class Invocation:
    """What the command line asked for: `given` holds the options that are config keys
    (None: not given); the rest acts on this run only."""

    given: dict[str, Any]
    task: tuple[str | None, str | None]  # --prompt, the positional TASK
    config: Path | None
    trust: bool | None  # --trust, --untrust, or neither
    init: InitTarget | None
    doctor: bool
    resume: tuple[str | None, bool]  # --resume ID, --continue

    @property
    def one_shot(self) -> bool:
        """A task to run and report on (given, or piped on stdin), not the REPL."""
        return not (self.doctor or self.init) and (any(self.task) or not sys.stdin.isatty())


def _task(prompt: str | None, task: str | None) -> str | None:
    """The one-shot task: -p, the positional TASK, or text piped on stdin."""
    if prompt and task:
        raise UsageError("Give the task either with --prompt or as an argument, not both.")
    text = prompt if prompt is not None else task
    if text is not None and not text.strip():
        raise UsageError("The task given is empty. Write what to do after --prompt (or as "
                         "the argument), or leave both out for the REPL.")
    if text is None and not sys.stdin.isatty():
        text = sys.stdin.read()
        if not text.strip():
            raise UsageError(
                "No task: stdin is not a terminal and was empty. Pass a task with "
                "--prompt, as an argument, or pipe it in."
            )
    return text.strip() if text is not None else None


def _main(call: "Invocation") -> int:
    from swival.launch import init_config, load

    settings = load(call.given, call.config, call.trust)
    if call.init is not None:
        return init_config(settings, call.init.value)
    try:
        return _start(settings, call)
    except (SwivalError, KeyboardInterrupt) as error:
        if not call.one_shot or settings.output_format == "text":
            raise
        from swival.config import redactor_for
        from swival.records import report_failure

        code, message = _failure(error)
        return report_failure(settings, message, code, output_format=settings.output_format,
                              redactor=redactor_for(settings, os.environ))


def _start(settings: "Settings", call: "Invocation") -> int:
    """Settle trust, then run the doctor, a one-shot task or the REPL."""
    from swival.config import load_settings

    if all(call.resume):
        raise UsageError("Give either --resume ID or --continue (-c), not both.")
    text = None if call.doctor else _task(*call.task)
    interactive = text is None and not call.doctor
    from swival.launch import settle_trust

    settings = settle_trust(
        settings, lambda check: load_settings(call.given, config_path=call.config,
                                              trusted=check),
        ask=interactive and call.trust is None)
    if call.doctor:
        from swival.doctor import run_doctor

        return run_doctor(settings)
    from swival.config.secrets import named_secrets
    from swival.procscrub import scrub
    from swival.session import find_transcript, open_session

    scrub(named_secrets(settings, os.environ).values())

    transcript = find_transcript(settings, *call.resume)
    session = open_session(settings, interactive=interactive, transcript=transcript)
    try:
        if interactive:
            from swival.repl import run_repl

            return run_repl(session)
        from swival.oneshot import run_oneshot

        return run_oneshot(session, text or "")
    finally:
        session.close()  # stops MCP servers before the process exits


def _failure(error: BaseException) -> tuple[int, str]:
    """The exit code and the message for a run that stopped with `error`."""
    if isinstance(error, SwivalError):
        return error.exit_code, str(error)
    if isinstance(error, Terminated):
        return Terminated.exit_code, "terminated"
    return 130, "interrupted"


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def _redactor() -> "Redactor":
    """Hides API keys (from the environment or --api-key) in error text written before
    the settings could be read."""
    from swival.config import redactor_for

    argv = sys.argv
    given = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--api-key"]
    given += [a.split("=", 1)[1] for a in argv if a.startswith("--api-key=")]
    named = {"api_key": given[-1]} if given else {}  # the last --api-key is the one used
    return redactor_for(None, os.environ).with_secrets(named)


def _requested_format(argv: list[str]) -> str:
    """The output format a failed one-shot run asked for, read leniently from the command
    line, SWIVAL_* variables and config files (any of which may be what failed); "text"
    for the REPL, --doctor and --init-config."""
    from swival.config import requested_output_format

    try:
        ctx = typer.main.get_command(app).make_context(
            "swival", list(argv), resilient_parsing=True, ignore_unknown_options=True)
    except Exception:  # whatever else the parser makes of it: report as text
        return "text"
    given = ctx.params
    word = str(given.get("task") or "").strip().lower()
    if given.get("doctor") or given.get("init_config") or word == "doctor":
        return "text"
    if not (given.get("prompt") or given.get("task") or not sys.stdin.isatty()):
        return "text"
    chosen = given.get("output_format")
    try:
        return requested_output_format(
            {"output_format": chosen.value if chosen else None,
             "json": given.get("json_output")}, config_path=given.get("config"))
    except OSError:  # no working directory left to find the project in
        return "text"


def _fail(message: str, code: int, show: Callable[[], None] | None = None) -> None:
    """Leave with `code`, saying why: one JSON object (the stream's `result` line) when
    JSON output was asked for, else a line on stderr (or the parser's own usage text)."""
    output_format = _requested_format(sys.argv[1:])
    redactor = _redactor()
    if output_format != "text":
        from swival.records import report_failure

        report_failure(None, redactor.redact(message), code, output_format=output_format,
                       redactor=redactor)
    elif show is not None:
        show()
    else:
        _say(f"swival: {redactor.redact(message)}")
    _leave(code)


def _say(text: str) -> None:
    """A line on stderr the way the one-shot runner writes its own: wrapped between words
    on a terminal, whole on a pipe (rich is imported only when there is something to say)."""
    from swival.render import say

    say(text)


VALIDATOR_WORDS = (
    ("Value error, ", ""),
    ("Input should be a valid integer, unable to parse string as an integer",
     "it must be a whole number"),
    ("Input should be a valid number, unable to parse string as a number",
     "it must be a number"),
)


def _plain_usage(message: str) -> str:
    """A parser message without the validator's jargon ("Value error, ...")."""
    for jargon, words in VALIDATOR_WORDS:
        message = message.replace(jargon, words)
    return message


def main() -> None:
    """Console-script entry point: maps errors to exit codes, never shows a traceback."""
    signal.signal(signal.SIGTERM, _terminate)
    try:
        code = app(prog_name="swival", standalone_mode=False)
    except (SwivalError, KeyboardInterrupt, typer.Abort) as error:
        code, message = _failure(error)
        _fail(message, code)
    except Exception as error:
        show, code = getattr(error, "show", None), getattr(error, "exit_code", None)
        if not (callable(show) and isinstance(code, int)):
            raise
        # The parser's usage errors; their message already says what to do, once the
        # validator's own phrasing is put in a person's words.
        if isinstance(getattr(error, "message", None), str):
            error.message = _plain_usage(error.message)  # type: ignore[attr-defined]
        message = getattr(error, "format_message", error.__str__)()
        _fail(f"{message} (swival --help lists the options)", code, show=show)
    _leave(code if isinstance(code, int) else 0)


def _leave(code: int) -> NoReturn:
    """Exit with `code`. Once litellm was imported (a hosted model), the interpreter's
    teardown is skipped after the exit handlers ran: litellm's finalizers import modules
    during teardown, which hangs for good (or aborts) when a background thread was in the
    middle of an import as the run ended."""
    if "litellm" in sys.modules:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)
    sys.exit(code)
