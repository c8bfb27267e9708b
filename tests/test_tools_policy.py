"""CommandPolicy: modes, the allowlist on a real bash parse, and what "always" means."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from swival.errors import ConfigError
from swival.messages import ToolCall
from swival.tools.approval import person_words
from swival.tools.base import ToolContext
from swival.tools.core import core_tools
from swival.tools.policy import CommandPolicy, Question, Workspace, parse_mode, resolve_mode
from swival.tools.registry import ToolRegistry
from tests.evidence import record

# --- resolve_mode / parse_mode ---------------------------------------------------------

@pytest.mark.parametrize(("commands", "yolo", "interactive", "expected"), [
    ("ask", False, True, "ask"),
    ("ask", False, False, "none"),
    ("ask", True, False, "all"),
    ("none", True, True, "all"),
    ("all", False, False, "all"),
    ("none", False, True, "none"),
    (" git, pytest ,ls ", False, False, "git,pytest,ls"),
    ("ASK", False, True, "ask"),
])
def test_resolve_mode(commands: str, yolo: bool, interactive: bool, expected: str) -> None:
    assert resolve_mode(commands, yolo, interactive) == expected


@pytest.mark.parametrize("bad", ["", " , ", "git,rm -rf", "ls;rm"])
def test_invalid_policy_is_a_config_error(bad: str) -> None:
    with pytest.raises(ConfigError, match="comma-separated list of program names"):
        parse_mode(bad)


# --- the workspace every test below runs in -------------------------------------------

@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """Project `proj/` with `sub/`, `.git/hooks/`, `.swival/` and a symlink `out` that
    leads to `elsewhere/` beside it; `lib/` is an --add-dir, `ref/` an --add-dir-ro."""
    root = tmp_path / "proj"
    for d in ("sub", ".git/hooks", ".swival"):
        (root / d).mkdir(parents=True)
    for d in ("elsewhere", "lib", "ref"):
        (tmp_path / d).mkdir()
    (root / "out").symlink_to(tmp_path / "elsewhere")
    (root / "notes.txt").write_text("n\n")
    (tmp_path / "ref" / "data.txt").write_text("d\n")
    return Workspace.of(ToolContext(root=root, extra_dirs=(tmp_path / "lib",),
                                    read_only_dirs=(tmp_path / "ref",)),
                        {"PATH": "/usr/bin:/bin"})


# Each bypass of issue 10, with what the refusal must name. {out} is a directory outside
# the workspace.
BYPASSES = [
    ("git status;(touch x)", "a subshell `( … )`"),
    ("git status&&(touch x)", "a subshell `( … )`"),
    ("git status|(sh)", "a subshell `( … )`"),
    ("true;(touch x)", "a subshell `( … )`"),
    ("git status;>x", "a redirection with no command"),
    ("git status||>x", "a redirection with no command"),
    ("PATH=.:$PATH git status", "a variable assignment `PATH=…`"),
    ("GIT_PAGER='touch x' git log", "a variable assignment `GIT_PAGER=…`"),
    ("GIT_CONFIG_PARAMETERS=\"'core.pager=touch x'\" git log", "`GIT_CONFIG_PARAMETERS=…`"),
    ("GIT_EXTERNAL_DIFF=./x git diff", "`GIT_EXTERNAL_DIFF=…`"),
    ("git log $(touch x)", "command substitution `$( … )`"),
    ("git log `touch x`", "command substitution with backticks"),
    ('git log "$(touch x)"', "command substitution `$( … )`"),
    ("git log <(touch x)", "process substitution"),
    ("git status\ntouch x", "`touch` is not in the allowed programs"),
    ("git status; touch x", "`touch` is not in the allowed programs"),
    ("eval git status", "`eval`, which runs its arguments as shell code"),
    ("bash -c 'touch x'", "`bash`, which runs shell code"),
    ("git ls-files | xargs touch", "`xargs`, which runs another program"),
    ("env touch x", "`env`, which runs another program"),
    ("exec touch x", "`exec`, which replaces the shell"),
    ("gi? status", "a wildcard `?`"),
    ("g* status", "a wildcard `*`"),
    ("git log {a,b}", "brace"),
    ("git log ~", "a tilde"),
    ('"git" status', "a program name that is quoted"),
    ("g\\it status", "a program name that is quoted, escaped"),
    ("f() { touch x; }; f", "a function definition"),
    ("{ touch x; }", "a group `{ … }`"),
    ("git status & touch x", "running in the background `&`"),
    ("git status &", "running in the background `&`"),
    ("git sta\\\ntus", "a line continuation"),
    ("git status # ; touch x", "a comment"),
    ("git status <<EOF\nx\nEOF", "a heredoc"),
    ("git -c alias.x='!touch x' x", "`git -c`"),
    ("git -c core.pager='touch x' log", "`git -c`"),
    ("git -c core.fsmonitor='touch x' status", "`git -c`"),
    ("git -c core.sshCommand='touch x' fetch", "`git -c`"),
    ("git fetch --upload-pack='touch x' origin", "`git fetch --upload-pack`"),
    ("git config core.pager 'touch x'", "`git config`"),
    ("git config --add core.hooksPath /tmp", "`git config`"),
    ("git -C /tmp status", "`git -C`"),
    ("git --bare status", "`git --bare` before the subcommand"),
    ("git --git-dir=/tmp/r status", "`git --git-dir`"),
    ("git rebase -x 'touch x' HEAD~1", "`git rebase -x`"),
    ("git rebase --exec='touch x' HEAD~1", "`git rebase --exec`"),
    ("git bisect run touch x", "`git bisect run`"),
    ("git submodule foreach touch x", "`git submodule foreach`"),
    ("git filter-branch --tree-filter 'touch x'", "`git filter-branch`"),
    ("git difftool -y", "`git difftool`"),
    ("true > {out}/file", "writing `{out}/file`, outside the workspace"),
    ("git status > ../escape", "writing `../escape`, outside the workspace"),
    ("git status >> out/file", "writing `out/file`, outside the workspace"),
    ("git status > .git/hooks/pre-commit", "inside .git/ or .swival/"),
    ("git status > .swival/sessions.jsonl", "inside .git/ or .swival/"),
    ("git status 2> {out}/err", "outside the workspace"),
    ("git status &> {out}/all", "outside the workspace"),
    ("git status >& {out}/all", "outside the workspace"),
    ("git status < /etc/hostname", "reading `/etc/hostname`, outside the workspace"),
    ("git log -1 --format=x --output={out}/rc", "writing `{out}/rc`, outside the workspace"),
    ("git format-patch -o .git/hooks HEAD~1", "writing `.git/hooks`, inside .git/"),
    ("cd {out} && git status", "leaves the workspace"),
    ("cd .. && git status", "`cd ..`, which leaves the workspace"),
    ("cd sub && git status > ../../x", "writing `../../x`, outside the workspace"),
    ("cd && git status", "`cd` without exactly one directory"),
    ("cd - && git status", "`cd` without exactly one directory"),
    ("git status 'unclosed", "does not parse"),
    # Long options abbreviated, as git and GNU getopt accept them; short-option clusters.
    ("git rebase --exe='touch y' HEAD~1", "`git rebase --exe` (short for --exec)"),
    ("git fetch --upload-pa='touch y' origin", "(short for --upload-pack)"),
    ("git ls-remote --upload-p='touch y' .", "`git ls-remote --upload-p`"),
    ("git push --receive-p=evil origin", "(short for --receive-pack)"),
    ("git clone --conf core.fsmonitor='touch y' . c", "`git clone --conf` (short for --config)"),
    ("git log --ext-dif", "`git log --ext-dif` (short for --ext-diff)"),
    ("git commit --templ=/tmp/t", "(short for --template)"),
    ("git grep --open-files-in=vi x", "(short for --open-files-in-pager)"),
    ("git config --ad core.pager 'touch y'", "`git config` in a form that changes"),
    ("git config --get x --repl y", "`git config` in a form that changes"),
    ("env -iS'touch y'", "`env`, which runs another program"),
    ("env --split-s='touch y'", "`env`, which runs another program"),
    ("env -u HOME -0S'touch y'", "`env`, which runs another program"),
    ("make --ev='$(shell touch y)'", "(short for --eval)"),
    ("make --fil=/tmp/evil.mk", "(short for --file)"),
    ("make --dir=/tmp", "(short for --directory)"),
    ("make -kf /tmp/evil.mk", "`make -kf`"),
    ("sort --outp={out}/x notes.txt", "writing `{out}/x`, outside the workspace"),
    ("sort --compress-prog=./evil -S 1 notes.txt", "(short for --compress-program)"),
    ("install --strip-prog=./evil -s notes.txt bin/", "(short for --strip-program)"),
    ("printf -v'a[$(touch y)]' 1", "`printf -v`"),
    ("sed --line-length 5 'w /tmp/x' notes.txt", "sed's `w` command"),
    # Programs that write their path operands, git among them.
    ("git checkout-index -f --prefix=.git/hooks/ pre-commit", "writing `.git/hooks/`, inside"),
    ("git checkout-index -a --prefix=.gi", "`git checkout-index --prefix=.gi`, a prefix"),
    ("git worktree add ../outside-wt", "writing `../outside-wt`, outside the workspace"),
    ("git init --separate-git-dir={out}/g x", "writing `{out}/g`, outside the workspace"),
    ("git init {out}/r", "writing `{out}/r`, outside the workspace"),
    ("git clone . {out}/x", "writing `{out}/x`, outside the workspace"),
    ("git bundle create {out}/b HEAD", "writing `{out}/b`, outside the workspace"),
    ("git archive -o {out}/a.tar HEAD", "writing `{out}/a.tar`, outside the workspace"),
    ("git bundle create --version 3 {out}/b HEAD", "writing `{out}/b`, outside the workspace"),
    ("git fast-export --export-marks={out}/m HEAD", "writing `{out}/m`, outside the workspace"),
    ("cd sub && git fast-export --export-marks=../../m HEAD", "writing `../../m`, outside"),
    ("git push {out}/r main", "writing `{out}/r`, outside the workspace"),
    ("git push -o ci.skip file://{out}/r", "writing `{out}/r`, outside the workspace"),
    ("git push --repo ../r", "writing `../r`, outside the workspace"),
    ("git remote add mine {out}/r", "writing `{out}/r`, outside the workspace"),
    ("rm -rf ../proj", "writing `../proj`, which is `"),
    ("chmod -R 000 ../proj", "writing `../proj`, which is `"),
    ("cd sub && rm -rf ..", "writing `..`, which is `"),
    ("cp -r sub/.git .", "writing `./.git`, inside .git/"),
    ("mv sub/.git sub/..", "writing `sub/../.git`, inside .git/"),
    ("tar -cf x.tar --checkpoint=1 --checkpoint-action=exec='touch y' notes.txt",
     "`tar --checkpoint-action`, which runs a command"),
    ("tar -xf a.tar --to-com='sh -c id'", "(short for --to-command)"),
    ("tar -I 'touch y' -cf a.tar notes.txt", "`tar -I`, which runs a program"),
    ("rsync -avze 'touch y' notes.txt copy.txt", "`rsync -e`, which runs a program"),
    ("zip -T -TT 'touch y' a.zip notes.txt", "`zip -TT`, which runs a command"),
    ("find . -fprint {out}/x", "`find -fprint`, which writes a file"),
    ("git apply --unsafe-paths x.patch", "`git apply --unsafe-paths`"),
    ("git clean -fdx", "`git clean -x`"),
    ("cp notes.txt .git/hooks/pre-commit", "writing `.git/hooks/pre-commit`, inside .git/"),
    ("cp -t .git/hooks notes.txt", "writing `.git/hooks`, inside .git/"),
    ("cp notes.txt {out}/x", "writing `{out}/x`, outside the workspace"),
    ("cp -b --suffix=/../../x notes.txt copy.txt", "writing `copy.txt/../../x`, outside"),
    ("mv notes.txt .git/hooks/post-checkout", "writing `.git/hooks/post-checkout`, inside"),
    ("mv ../ref/data.txt here.txt", "writing `../ref/data.txt`, outside the workspace"),
    ("touch .git/hooks/pre-commit", "writing `.git/hooks/pre-commit`, inside .git/"),
    ("touch .SWIVAL/sessions/x.jsonl", "writing `.SWIVAL/sessions/x.jsonl`, inside"),
    ("touch .Git/hooks/pre-commit", "writing `.Git/hooks/pre-commit`, inside .git/"),
    ("chmod +x .git/hooks/pre-commit", "writing `.git/hooks/pre-commit`, inside .git/"),
    ("chmod -x,u+x .git/hooks/pre-commit", "writing `.git/hooks/pre-commit`, inside .git/"),
    ("ln -s .git/hooks/pre-commit h", "writing `.git/hooks/pre-commit`, inside .git/"),
    ("ln notes.txt {out}/hard", "writing `{out}/hard`, outside the workspace"),
    ("mkdir -p {out}/d", "writing `{out}/d`, outside the workspace"),
    ("install notes.txt {out}/x", "writing `{out}/x`, outside the workspace"),
    ("install -d .git/hooks/x", "writing `.git/hooks/x`, inside .git/"),
    ("install -dZ {out}/d", "writing `{out}/d`, outside the workspace"),
    ("install -d -Z .git/hooks/x", "writing `.git/hooks/x`, inside .git/"),
    ("cp --frobnicate notes.txt copy.txt", "`cp --frobnicate`, an option Swival cannot tell"),
    ("rm --no-such-option x", "`rm --no-such-option`, an option"),
    ("tee --exec=x", "`tee --exec`, an option"),
    ("tee .git/hooks/pre-commit", "writing `.git/hooks/pre-commit`, inside .git/"),
    ("rm -rf {out}", "writing `{out}`, outside the workspace"),
    ("rm .swival/sessions.jsonl", "writing `.swival/sessions.jsonl`, inside"),
    ("dd if=notes.txt of={out}/x", "writing `{out}/x`, outside the workspace"),
    ("truncate -s 0 {out}/x", "writing `{out}/x`, outside the workspace"),
    # A path checked now may lead elsewhere once a link is made or moved before the write.
    ("ln -s sub/x h && git status > h", "writing `h` after `ln`, which can create or move"),
    ("git checkout evil && git status > h", "writing `h` after `git checkout`"),
    ("mv sub sub2 && cd sub2 && git status", "`cd sub2` after `mv`"),
    ("git status > h | git stash", "writing `h` after `git stash`"),
    ("cp -r sub copy && git log > copy/x", "writing `copy/x` after `cp`"),
    ("cd .git/hooks && git init -q", "writing `.`, inside .git/"),
    # git's ways to start a browser or a server.
    ("git help -w status", "`git help --web`, which starts a web browser"),
    ("git help --web log", "`git help --web`, which starts a web browser"),
    ("git help --we log", "`git help --web`, which starts a web browser"),
    ("git help -aw", "`git help --web`, which starts a web browser"),
    ("git web--browse http://example.com", "`git web--browse`, which runs other programs"),
    ("git instaweb --httpd=python", "`git instaweb`, which runs other programs"),
    # Archivers and copiers: where their command lines and archives say they write.
    ("tar -xf a.tar -C {out}", "writing `{out}`, outside the workspace"),
    ("tar --extract --file a.tar --dir={out}", "writing `{out}`, outside the workspace"),
    ("tar xfC a.tar {out}", "writing `{out}`, outside the workspace"),
    ("tar -czf {out}/a.tgz sub", "writing `{out}/a.tgz`, outside the workspace"),
    ("tar cf {out}/a.tar sub", "writing `{out}/a.tar`, outside the workspace"),
    ("tar -cf .git/hooks/pre-commit sub", "writing `.git/hooks/pre-commit`, inside"),
    ("tar -cf a.tar -g {out}/snap sub", "writing `{out}/snap`, outside the workspace"),
    ("tar -cf a.tar --remove-files {out}/x", "writing `{out}/x`, outside the workspace"),
    ("tar -xPf a.tar", "`tar -P`, which writes members at absolute paths"),
    ("tar --absolute-n -xf a.tar", "`tar --absolute-n`, which writes members at absolute"),
    ("tar --keep-directory-symlink -xf a.tar", "`tar --keep-directory-symlink`, which follows"),
    ("unzip a.zip -d {out}", "writing `{out}`, outside the workspace"),
    ("unzip -o -d .git/hooks a.zip", "writing `.git/hooks`, inside .git/"),
    ("unzip missing.zip", "`unzip` extracting an archive Swival cannot list"),
    ("tar -xf missing.tar", "`tar` extracting an archive Swival cannot list"),
    ("tar -x < notes.txt", "`tar` extracting an archive Swival cannot list"),
    ("unzip -: a.zip", "`unzip -:`, which writes members through `..`"),
    ("zip -r {out}/a.zip sub", "writing `{out}/a.zip`, outside the workspace"),
    ("zip -m a.zip {out}/x", "writing `{out}/x`, outside the workspace"),
    ("zip -r a.zip sub -O {out}/b.zip", "writing `{out}/b.zip`, outside the workspace"),
    ("rsync -a sub/ {out}/", "writing `{out}/`, outside the workspace"),
    ("rsync -a sub/ .swival/", "writing `.swival/`, inside"),
    ("rsync -a --backup-dir={out} sub/ copy/", "writing `{out}`, outside the workspace"),
    ("rsync -a --delete sub/ .", "writing `.`, which is `"),
    ("rsync -aK sub/ copy/", "`rsync -K`, which follows symlinked directories"),
    # A directory's contents copied into the project root bring their .git/ and .swival/.
    ("rsync -a sub/ .", "writing `.`, which is `"),
    ("rsync -a sub/. ../proj", "writing `../proj`, which is `"),
    ("cp -r sub/. .", "writing `.`, which is `"),
    ("cp -rT sub .", "writing `.`, which is `"),
    ("cp -a --no-target-dir sub ./", "writing `./`, which is `"),
    # Without the sandbox, git may replace .swival/ with what a commit holds there.
    ("git checkout main", "`git checkout`, which updates the work tree from a commit"),
    ("git switch -q main", "`git switch`, which updates the work tree from a commit"),
    ("git reset --hard HEAD~1", "`git reset`, which updates the work tree"),
    ("git merge evil", "`git merge`, which updates the work tree"),
    ("git pull", "`git pull`, which updates the work tree"),
    ("git stash pop", "`git stash`, which updates the work tree"),
    ("git restore .", "`git restore`, which updates the work tree"),
    ("git checkout-index -a -f", "`git checkout-index`, which updates the work tree"),
]

ALLOWED = [
    "git status",
    "git log --oneline | head -5",
    "pytest -q 2>&1 | tail -20",
    "ls > notes.txt",
    "cd sub && ls",
    "cd sub && ls > listing.txt && cd .. && ls",
    "git diff > /dev/null 2>&1",
    "ls < notes.txt",
    "ls ../ref/data.txt < ../ref/data.txt > ../lib/copy.txt",
    "git commit -m 'fix: a;b | (c)'",
    'git commit -m "say \\"hi\\""',
    "git status\ngit log -1",
    "git status; ls || true",
    "git config --get user.name",
    "git log --format=%H -- sub/x.py",
    "git log -1 --output=log.txt",
]


def fill(command: str, ws: Workspace) -> str:
    return command.replace("{out}", str(ws.root.parent / "elsewhere"))


@pytest.mark.parametrize(("command", "named"), BYPASSES, ids=[c for c, _ in BYPASSES])
def test_allowlist_refuses_every_bypass(ws: Workspace, command: str, named: str) -> None:
    command, named = fill(command, ws), fill(named, ws)
    reason = CommandPolicy("git", workspace=ws).approve(command)
    record("allowlist bypass", f"--commands git: {command}", "in-process",
           escaped=reason is None)
    assert reason is not None and named in reason


CONSTRUCTS = [(c, n) for c, n in BYPASSES if "not in the allowed programs" not in n]


@pytest.mark.parametrize(("command", "named"), CONSTRUCTS, ids=[c for c, _ in CONSTRUCTS])
def test_listing_every_program_does_not_open_a_bypass(ws: Workspace, command: str,
                                                      named: str) -> None:
    """Even with the inner programs listed, the construct itself needs approval."""
    listed = "git,touch,sh,bash,xargs,env,eval,exec,true,f"
    reason = CommandPolicy(listed, workspace=ws).approve(fill(command, ws))
    record("allowlist bypass", f"every program listed: {command}", "in-process",
           escaped=reason is None)
    assert reason is not None and fill(named, ws) in reason


@pytest.mark.parametrize(("command", "_named"), BYPASSES, ids=[c for c, _ in BYPASSES])
def test_always_git_adds_git_and_nothing_more(ws: Workspace, command: str,
                                              _named: str) -> None:
    asked: list[Question] = []

    def ask(question: Question) -> str:
        asked.append(question)
        return "always" if question.command == "git status" else "deny"

    policy = CommandPolicy("ask", ask=ask, workspace=ws)
    assert policy.approve("git status") is None
    assert policy.approve("git log -1") is None and len(asked) == 1  # git is now allowed
    reason = policy.approve(fill(command, ws))
    record("allowlist bypass", f"after always git: {command}", "in-process",
           escaped=reason is None)
    assert reason is not None and "declined" in reason
    assert len(asked) == 2 and asked[1].command == fill(command, ws)


@pytest.mark.parametrize("command", ALLOWED)
def test_plain_allowlisted_commands_run(ws: Workspace, command: str) -> None:
    policy = CommandPolicy("git,pytest,ls,head,tail", workspace=ws)
    assert policy.approve(command) is None


@pytest.mark.parametrize(("command", "allowed"), [
    ("cd sub && ls > ../x.txt", True),              # runs in sub: ../x.txt is in the root
    ("cd sub; ls > ../x.txt", False),               # if cd fails, ls runs in the root
    ("cd sub || ls > ../x.txt", False),
    ("ls || cd sub && ls > ../x.txt", False),       # ls may succeed and skip the cd
    ("ls && cd sub && ls > ../x.txt", True),
    ("ls | cd sub && ls > ../x.txt", False),        # a cd in a pipeline moves nothing
    ("cd sub && cd .. && ls > x.txt", True),
    ("cd sub && ls; cd .. ", False),                # after `;` the root is possible too
    ("cd ../lib && ls > y.txt", True),              # an --add-dir is part of the workspace
    ("cd ../ref && ls", False),                     # a read-only dir is not
])
def test_redirections_follow_cd(ws: Workspace, command: str, allowed: bool) -> None:
    reason = CommandPolicy("ls", workspace=ws).approve(command)
    assert (reason is None) is allowed, reason


def always_asker(ws: Workspace) -> tuple[CommandPolicy, list[Question]]:
    """An `ask` policy whose person answers "always" to everything, and what it was asked."""
    asked: list[Question] = []

    def ask(question: Question) -> str:
        asked.append(question)
        return "always"

    return CommandPolicy("ask", ask=ask, workspace=ws), asked


def test_constructs_are_asked_every_time_and_always_adds_only_programs(ws: Workspace) -> None:
    policy, asked = always_asker(ws)
    assert policy.approve("git status;(touch x)") is None
    assert asked[-1] == Question("git status;(touch x)", ("git",), ("a subshell `( … )`",))
    assert policy.approve("git status;(touch x)") is None
    assert asked[-1] == Question("git status;(touch x)", (), ("a subshell `( … )`",))
    assert policy.approve("git log -c x | head") is None
    assert asked[-1].programs == ("head",) and asked[-1].found == ()
    assert policy.approve("git log | head -3") is None
    assert len(asked) == 3
    assert policy.approved == {"git", "head"}


def test_a_program_given_by_path_is_never_offered_always(ws: Workspace) -> None:
    policy, asked = always_asker(ws)
    assert policy.approve("./build.sh --fast") is None
    assert policy.approve("./build.sh --fast") is None
    assert len(asked) == 2 and asked[0].programs == ()
    assert asked[0].found == ("`./build.sh`, a program named by its path",)


def test_a_path_on_the_allowlist_matches_only_itself(ws: Workspace) -> None:
    policy = CommandPolicy("git,./run", workspace=ws)
    assert policy.approve("./run --fast") is None
    assert "`./git` is not in the allowed programs" in (policy.approve("./git status") or "")
    assert "`/tmp/git`" in (policy.approve("/tmp/git status") or "")


@pytest.mark.parametrize(("command", "allowed"), [
    ("sort -o sorted.txt notes.txt", True),
    ("sort -o {out}/.bashrc notes.txt", False),
    ("ls | tee listing.txt", True),
    ("ls | tee listing.txt {out}/x", False),
    ("uniq notes.txt {out}/x", False),
    ("sed -i s/n/m/ notes.txt", True),
    ("sed -i s/n/m/ {out}/x", False),
    ("sed -i s/n/m/ .git/config", False),
])
def test_files_a_program_is_told_to_write_are_checked(ws: Workspace, command: str,
                                                      allowed: bool) -> None:
    reason = CommandPolicy("sort,tee,uniq,sed,ls", workspace=ws).approve(fill(command, ws))
    assert (reason is None) is allowed, reason


@pytest.mark.parametrize("path", ["/usr/bin:.:/bin", "/usr/bin:", "bin:/usr/bin", ""])
def test_a_relative_path_entry_makes_every_program_a_question(tmp_path: Path,
                                                              path: str) -> None:
    """With `.` (or an empty entry) in PATH, `git` could be a file the model wrote."""
    ws = Workspace.of(ToolContext(root=tmp_path), {"PATH": path})
    reason = CommandPolicy("git", workspace=ws).approve("git status")
    assert reason is not None and "PATH holds the relative directory" in reason
    assert CommandPolicy("git", workspace=ws).approve("cd . && pwd") is None


def test_a_program_found_in_a_writable_path_entry_is_a_question(tmp_path: Path) -> None:
    """`/ws/.venv/bin` on PATH before the real `git`: a command can put its own `git`
    there, so `git` is asked about; so is a program whose PATH hit leads into the
    workspace. A PATH whose writable entry comes after the real program stays quiet."""
    ws_root, lib, tools = tmp_path / "ws", tmp_path / "lib", tmp_path / "tools"
    venv = ws_root / ".venv" / "bin"
    for folder in (venv, lib, tools):
        folder.mkdir(parents=True)
    (tools / "git").symlink_to("/usr/bin/git")
    (ws_root / "fake").write_text("#!/bin/sh\ntouch pwned\n")
    (ws_root / "fake").chmod(0o755)
    (tools / "fake").symlink_to(ws_root / "fake")
    ctx = ToolContext(root=ws_root, extra_dirs=(lib,))

    def reason(path: str, command: str) -> str | None:
        workspace = Workspace.of(ctx, {"PATH": path})
        found = CommandPolicy("git,fake,pytest", workspace=workspace).approve(command)
        record("allowlist bypass", f"PATH={path}: {command}", "in-process",
               escaped=found is None)
        return found

    empty_venv = reason(f"{venv}:{tools}", "git status")
    assert empty_venv is not None and f"PATH looks for `git` in `{venv}` first" in empty_venv
    (venv / "pytest").write_text("#!/bin/sh\n")
    (venv / "pytest").chmod(0o755)
    found = reason(f"{tools}:{venv}", "pytest -q")
    assert found is not None and f"`pytest` is found in `{venv}` on PATH" in found
    in_add_dir = reason(f"{lib}:{tools}", "git status")
    assert in_add_dir is not None and f"PATH looks for `git` in `{lib}` first" in in_add_dir
    linked = reason(str(tools), "fake")
    assert linked is not None and "leads to" in linked and str(ws_root / "fake") in linked
    assert "directories inside the workspace, out of PATH" in linked
    workspace = Workspace.of(ctx, {"PATH": f"{tools}:{venv}"})
    assert CommandPolicy("git", workspace=workspace).approve("git status") is None


def test_cd_with_cdpath_set_is_a_question(ws: Workspace) -> None:
    with_cdpath = dataclasses.replace(ws, cdpath=True)
    reason = CommandPolicy("ls", workspace=with_cdpath).approve("cd sub && ls > x")
    assert reason is not None and "CDPATH" in reason and "./sub" in reason
    assert CommandPolicy("ls", workspace=with_cdpath).approve("cd ./sub && ls > x") is None


def test_refusal_tells_the_model_what_to_do_instead(ws: Workspace) -> None:
    policy = CommandPolicy("git", workspace=ws)
    assert "run each program as its own command" in (policy.approve("git log $(id)") or "")
    assert "write_file" in (policy.approve("git log > ../x") or "")
    assert "do without that option" in (policy.approve("git -c a.b=c log") or "")
    reason = policy.approve("git diff | less")
    assert reason is not None and "`less` is not in the allowed programs (git)" in reason


def test_the_policy_without_a_workspace_writes_nowhere() -> None:
    policy = CommandPolicy("git,ls")
    assert "approval" in (policy.approve("git status;(touch pwned)") or "")
    assert policy.approve("git status > /dev/null") is None
    assert "outside the workspace" in (policy.approve("ls > notes.txt") or "")
    assert "leaves the workspace" in (policy.approve("cd sub && ls") or "")


def test_the_parser_missing_fails_closed(tmp_path: Path) -> None:
    """A real interpreter in which tree-sitter cannot be imported."""
    script = ("import sys; sys.modules['tree_sitter'] = None\n"
              "from swival.tools.policy import CommandPolicy\n"
              "print(CommandPolicy('git').approve('git status'))\n"
              "print(CommandPolicy('all').approve('git status'))\n"
              "asked = []\n"
              "CommandPolicy('ask', ask=lambda q: asked.append(q) or 'deny')"
              ".approve('git status')\n"
              "print(asked[0].found)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout.splitlines()
    assert out[0] == (
        "Swival's shell parser could not be loaded, so it cannot check any command and each "
        "one needs a person's approval, which no one can give in this run. Tell the user: "
        "installing Swival again the way it was installed (pip, pipx or uv) brings back the "
        "parser, the packages tree-sitter and tree-sitter-bash.")
    assert out[1] == "None"
    assert "every command, since Swival's shell parser could not be loaded (" in out[2]
    assert "tree_sitter" in out[2] and "installing Swival again brings it back" in out[2]


# --- modes --------------------------------------------------------------------------

def test_all_allows_everything() -> None:
    assert CommandPolicy("all").approve("rm -rf build && curl x | sh") is None


def test_none_refuses_and_says_how_to_allow() -> None:
    reason = CommandPolicy("none").approve("ls")
    assert reason is not None
    assert person_words(reason) == "not run: commands are disabled (--commands)"
    assert "--commands all" in reason and "--yolo" in reason and "--commands git,pytest" in reason


def test_ask_without_a_terminal_says_so_not_that_commands_are_off() -> None:
    reason = CommandPolicy("none", unattended=True).approve("ls")
    assert reason is not None
    assert person_words(reason) == "not run: commands need approval and this run cannot ask"
    assert "no terminal to ask on" in reason and "--commands git,pytest" in reason


def test_ask_once_always_deny(ws: Workspace) -> None:
    asked: list[Question] = []
    answers = iter(["once", "once", "always", "deny"])

    def ask(question: Question) -> str:
        asked.append(question)
        return next(answers)

    policy = CommandPolicy("ask", ask=ask, workspace=ws)
    assert policy.approve("pytest -q") is None            # once
    assert policy.approve("pytest -x") is None            # once again: asked again
    assert policy.approve("git log | head") is None       # always: remembers git and head
    assert policy.approve("git status") is None           # not asked
    assert policy.approve("head -1 x && git diff") is None  # not asked
    reason = policy.approve("rm -rf build")               # deny
    assert reason is not None and "declined" in reason
    assert person_words(reason) == "not run: you declined"  # what the person reads
    assert [(q.command, q.programs) for q in asked] == [
        ("pytest -q", ("pytest",)), ("pytest -x", ("pytest",)),
        ("git log | head", ("git", "head")), ("rm -rf build", ("rm",))]


def test_ask_without_callback_refuses() -> None:
    reason = CommandPolicy("ask").approve("ls")
    assert reason is not None and "--commands all" in reason
    assert person_words(reason) == "not run: it needs approval and this run cannot ask"
    found = CommandPolicy("git").approve("git log $(id)")
    assert found is not None and person_words(found).startswith("not run: it needs approval (")


def test_describe() -> None:
    assert CommandPolicy("all").describe() == "all commands allowed"
    assert CommandPolicy("git,ls").describe() == "commands allowed: git, ls"


def test_question_shows_control_characters_as_escapes() -> None:
    question = Question("echo safe\x1b[2K\rrm -rf x\n", (), ())
    assert question.shown == "echo safe\\x1b[2K\\rrm -rf x\n"


WRITERS = "git,cp,mv,ln,touch,mkdir,chmod,install,tee,rm,sort,env,make,printf,ls"


@pytest.mark.parametrize("command", [
    "cp notes.txt copy.txt",
    "cp notes.txt copy.txt > log.txt",
    "mv notes.txt sub/notes.txt",
    "touch sub/new",
    "mkdir -p sub/a/b",
    "chmod +x notes.txt",
    "chmod 644 notes.txt sub",
    "ln -s notes.txt link",
    "ln -s ../lib/x sub/link",
    "install -m 644 notes.txt sub/",
    "rm -f sub/old",
    "rm --recursive --force --one-file sub/old",
    "cp --no-preserve=mode --sparse always notes.txt copy.txt",
    "install -Z -m 644 notes.txt sub/",
    "ls | tee listing.txt",
    "sort -o sorted.txt notes.txt",
    "sort --output=sorted.txt --check notes.txt",
    "git checkout-index -a --prefix=export/",
    "git worktree list",
    "git clone . sub/clone",
    "git bundle create repo.bundle HEAD",
    "git format-patch --to=someone@example.com -1",
    "git checkout-index --temp notes.txt",
    "git config --global --get user.name",
    "git config --list --show-origin",
    "git clean -fd",
    "git push origin main",
    "git push -u git@example.com:team/repo.git HEAD",
    "git remote add upstream https://example.com/repo.git",
    "git bundle create --version 3 repo.bundle HEAD",
    "rm -rf sub",
    "cp notes.txt sub/..",
    "cp -r sub/. copy",
    "cp -rT sub copy",
    "env",
    "env -i A=1",
    "env -u HOME",
    "make -j4 test",
    "make --dry-run --debug",
    "printf '%s' x",
])
def test_plain_writes_inside_the_workspace_run_unasked(ws: Workspace, command: str) -> None:
    assert CommandPolicy(WRITERS, workspace=ws).approve(command) is None


@pytest.mark.parametrize("command", [
    "git help status", "git help -a", "git status --help", "tar -xf a.tar", "tar -xzf a.tgz -C sub",
    "tar -cf a.tar sub", "tar -tvf {out}/a.tar", "tar xf a.tar", "zip -r a.zip sub",
    "rsync -a sub/ copy/", "rsync -a --delete sub/ copy/", "rsync -a sub/. copy",
    "unzip -l a.zip", "unzip a.zip",
    "unzip -o a.zip -d sub", "git reset HEAD~1", "git stash list", "git worktree list",
    "git clone . sub/clone", "git checkout-index -a --prefix=export/",
])
def test_archivers_and_plain_git_inside_the_workspace_run_unasked(ws: Workspace,
                                                                   command: str) -> None:
    _zip(ws.root / "a.zip", "plain.txt", "sub/x.txt")
    _tar(ws.root / "a.tar", "plain.txt", "sub/x.txt")
    _tar(ws.root / "a.tgz", "plain.txt")
    policy = CommandPolicy("git,tar,zip,unzip,rsync", workspace=ws)
    assert policy.approve(fill(command, ws)) is None


def _tar(path: Path, *members: str) -> None:
    import io
    import tarfile
    with tarfile.open(path, "w:gz" if path.suffix == ".tgz" else "w") as archive:
        for member in members:
            info = tarfile.TarInfo(member)
            info.size = 2
            archive.addfile(info, io.BytesIO(b"x\n"))


def _zip(path: Path, *members: str) -> None:
    import zipfile
    with zipfile.ZipFile(path, "w") as archive:
        for member in members:
            archive.writestr(member, "x\n")


@pytest.mark.parametrize(("members", "named"), [
    (("out/file",), "out/file`, outside the workspace"),  # `out` leads elsewhere
    ((".git/hooks/pre-commit",), ".git/hooks/pre-commit`, inside .git/"),
    ((".SWIVAL/sessions/x.jsonl",), ".SWIVAL/sessions/x.jsonl`, inside .git/ or .swival/"),
    (("ok.txt", "../escape.txt"), "../escape.txt`, outside the workspace"),
])
def test_unzip_members_are_checked_where_they_would_land(
        ws: Workspace, members: tuple[str, ...], named: str) -> None:
    """unzip follows a symlink already in the workspace (`out` leads outside)."""
    _zip(ws.root / "evil.zip", *members)
    for command in ("unzip evil.zip", "unzip -o evil", "cd sub && unzip ../evil.zip -d .."):
        reason = CommandPolicy("unzip,cd", workspace=ws).approve(command)
        record("allowlist bypass", f"--commands unzip: {command} holding {members[-1]}",
               "in-process", escaped=reason is None)
        assert reason is not None and named in reason, reason


@pytest.mark.parametrize(("members", "named"), [
    ((".git/hooks/pre-commit",), ".git/hooks/pre-commit`, inside .git/"),
    (("ok.txt", ".swival/sessions/x.jsonl"), ".swival/sessions/x.jsonl`, inside"),
    (("ok.txt", "../escape.txt"), "../escape.txt`, outside the workspace"),
])
def test_tar_members_are_checked_where_they_would_land(
        ws: Workspace, members: tuple[str, ...], named: str) -> None:
    _tar(ws.root / "evil.tgz", *members)
    for command in ("tar -xzf evil.tgz", "tar xf evil.tgz", "tar --extract --file=evil.tgz",
                    "cd sub && tar -xf ../evil.tgz -C .."):
        reason = CommandPolicy("tar,cd", workspace=ws).approve(command)
        record("allowlist bypass", f"--commands tar: {command} holding {members[-1]}",
               "in-process", escaped=reason is None)
        assert reason is not None and named in reason, reason
    assert CommandPolicy("tar", workspace=ws).approve("tar -tzf evil.tgz") is None


@pytest.mark.parametrize(("command", "named"), [
    ("tar -xzf wrapped.tgz --strip-components=1", ".git/hooks/pre-commit`, inside .git/"),
    ("tar -xzf wrapped.tgz --strip-components 2", "hooks/pre-commit`, outside"),
    ("tar -xzf wrapped.tgz --transform=s,^top,.git,", "`tar` extracting an archive Swival"),
    ("tar -xzf wrapped.tgz --xform s,^top,.git,", "`tar` extracting an archive Swival"),
    ("tar -xzf wrapped.tgz --one-top-level=.git", "`tar` extracting an archive Swival"),
    ("unzip -j flat.zip", ".swival`, inside .git/ or .swival/"),
])
def test_renamed_members_are_checked_or_asked_about(ws: Workspace, command: str,
                                                    named: str) -> None:
    _tar(ws.root / "wrapped.tgz", "top/.git/hooks/pre-commit")
    _zip(ws.root / "flat.zip", "deep/dir/.swival")
    (ws.root / "hooks").symlink_to(ws.root.parent / "elsewhere")
    reason = CommandPolicy("tar,unzip", workspace=ws).approve(command)
    record("allowlist bypass", f"--commands tar,unzip: {command}", "in-process",
           escaped=reason is None)
    assert reason is not None and named in reason, reason


def test_git_updating_the_work_tree_runs_unasked_inside_the_sandbox(ws: Workspace) -> None:
    confined = dataclasses.replace(ws, confined=True)
    for command in ("git checkout main", "git status > s.txt && git checkout main",
                    "git pull", "git reset --hard"):
        assert CommandPolicy("git", workspace=confined).approve(command) is None, command


def test_policy_wired_into_run_command(tmp_path: Path) -> None:
    ctx = ToolContext(root=tmp_path)
    workspace = Workspace.of(ctx, {"PATH": "/usr/bin:/bin"})
    ctx.approve = CommandPolicy("ls", workspace=workspace).approve
    registry = ToolRegistry(core_tools())
    refused = registry.run(ToolCall("1", "run_command", {"command": "touch x"}), ctx)
    assert refused.is_error and refused.content.startswith("command refused: `touch`")
    assert refused.meta["summary"] == "not run: `touch` is not allowed (--commands ls)"
    assert not (tmp_path / "x").exists()
    for i, command in enumerate(["ls;(touch x)", "ls > /dev/null;>x", "ls > ../x"]):
        result = registry.run(ToolCall(str(i), "run_command", {"command": command}), ctx)
        assert result.is_error and "command refused" in result.content
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()
    allowed = registry.run(ToolCall("9", "run_command", {"command": "ls > listing"}), ctx)
    assert not allowed.is_error and allowed.meta["exit_code"] == 0
    assert (tmp_path / "listing").exists()


@pytest.mark.parametrize("command", ["unzip a.zip", "tar -xf a.tar", "tar xf /dev/zero"])
def test_an_archive_that_is_a_pipe_or_device_is_not_opened(ws: Workspace,
                                                           command: str) -> None:
    """Listing members must not wait on a FIFO the model made (or read a device)."""
    import os
    import threading
    for name in ("a.zip", "a.tar"):
        os.mkfifo(ws.root / name)
    reasons: list[str | None] = []
    worker = threading.Thread(target=lambda: reasons.append(
        CommandPolicy("unzip,tar", workspace=ws).approve(command)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    record("hang", f"policy check of `{command}` on a FIFO or device", "in-process",
           hung=worker.is_alive())
    assert not worker.is_alive(), "the policy check waited on a pipe"
    assert reasons[0] is not None and "an archive Swival cannot list" in reasons[0]
