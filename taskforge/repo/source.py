"""Fetch a repository at a pinned commit with GitPython (a URL or a local path)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from taskforge.errors import InfraError, UserError


@dataclass
class Source:
    repo: str          # as given (URL, or absolute path)
    name: str          # short name for ids and images
    commit: str        # resolved full sha
    commit_date: str   # ISO 8601, the committer date
    path: Path         # the clone's work tree
    origin: str = ""   # stable repository name (host/owner/name, or the directory's name)


def _is_url(s: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*://", s)) or bool(re.match(r"^[\w.-]+@[\w.-]+:", s))


def repo_name(source: str) -> str:
    base = source.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return re.sub(r"\.git$", "", base) or "repo"


def clone_error(exc) -> str:
    """The cause git gave (its `fatal:` line), not GitPython's quoting around it."""
    text = str(getattr(exc, "stderr", "") or exc)
    lines = [ln.strip().strip("'\"").strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and ln not in ("stderr:",)]
    fatal = [ln for ln in lines if "fatal:" in ln or "error:" in ln]
    pick = (fatal or lines or [f"git exited with status {getattr(exc, 'status', '?')}"])[-1]
    return re.sub(r"^stderr:\s*", "", pick)[:300]


def stable_name(url_or_path: str) -> str:
    """A repository's name for datasets and split hashes: `host/owner/name` for a
    URL (scheme, credentials and `.git` dropped), the directory's name for a path,
    so a temporary checkout and the same project cloned elsewhere agree."""
    s = url_or_path.strip().rstrip("/")
    if not _is_url(s):
        return repo_name(s).lower()
    s = re.sub(r"^[a-z][a-z0-9+.-]*://", "", s)
    s = re.sub(r"^[^@/]*@", "", s)                # credentials, or git@ of scp-like URLs
    s = re.sub(r"^([\w.-]+):(?!\d+/)", r"\1/", s)   # host:owner/name -> host/owner/name
    s = re.sub(r":\d+/", "/", s, count=1)          # a port
    return re.sub(r"\.git$", "", s).lower()


def _origin_of(path: Path) -> str | None:
    import git

    try:
        with git.Repo(path) as r:
            return next((rm.url for rm in r.remotes if rm.name == "origin"), None)
    except Exception:
        return None


def _submodules(repo, source: str) -> None:
    """Test data often lives in a submodule (tomlkit's tests/toml-test), empty in
    a plain clone. Local submodule URLs need file transport, off by default since
    git 2.38; the repository was given to us, so its own submodules are trusted."""
    import git

    try:
        repo.git.execute(["git", "-c", "protocol.file.allow=always", "submodule", "update",
                          "--init", "--recursive", "--depth", "1"])
    except git.GitCommandError:
        try:        # a server that cannot serve a shallow fetch of that commit
            repo.git.execute(["git", "-c", "protocol.file.allow=always", "submodule",
                              "update", "--init", "--recursive"])
        except git.GitCommandError as exc:
            raise (InfraError if _is_url(source) else UserError)(
                f"cannot fetch the submodules of {source}: {clone_error(exc)}") from None
    # A submodule's `.git` is a file pointing into the clone's .git/modules: its
    # checkout is plain files to every later stage.
    for gitfile in sorted(Path(repo.working_tree_dir).rglob(".git")):
        if gitfile.is_file() and gitfile.parent != Path(repo.working_tree_dir):
            gitfile.unlink()


def fetch(source: str, dest: Path, ref: str | None = None) -> Source:
    """Clone `source` into `dest` and check out `ref` (default: its HEAD)."""
    import git

    if _is_url(source):
        repo_id = source
    else:
        path = Path(source).expanduser()
        if not path.exists():
            raise UserError(f"no such repository: {source}")
        if not path.is_dir():
            raise UserError(f"not a directory: {source}")
        try:
            git.Repo(path, search_parent_directories=False)
        except git.InvalidGitRepositoryError:
            raise UserError(f"not a git repository: {source}") from None
        except git.NoSuchPathError:
            raise UserError(f"no such repository: {source}") from None
        repo_id = str(path.resolve())
    try:
        repo = git.Repo.clone_from(repo_id, dest, no_checkout=True)
    except git.GitCommandError as exc:
        raise (InfraError if _is_url(source) else UserError)(
            f"cannot clone {source}: {clone_error(exc)}") from None
    try:
        if not repo.refs and not ref:
            raise UserError(f"repository has no commits: {source}")
        target = ref or "HEAD"
        try:
            commit = repo.commit(target)
        except (git.BadName, ValueError, git.GitCommandError):
            try:
                commit = repo.commit(f"origin/{target}")
            except (git.BadName, ValueError, git.GitCommandError):
                raise UserError(f"no such ref in {source}: {target}") from None
        try:
            repo.git.checkout("--force", "--detach", commit.hexsha)
        except git.GitCommandError as exc:      # objects missing (a partial mirror), a bad path
            raise (InfraError if _is_url(source) else UserError)(
                f"cannot check out {commit.hexsha[:12]} of {source}: {clone_error(exc)}") from None
        if (dest / ".gitmodules").is_file():
            _submodules(repo, source)
        origin = source if _is_url(source) else (_origin_of(Path(repo_id)) or repo_id)
        return Source(repo=repo_id, name=repo_name(repo_id), commit=commit.hexsha,
                      commit_date=commit.committed_datetime.isoformat(), path=dest,
                      origin=stable_name(origin))
    finally:
        repo.close()
