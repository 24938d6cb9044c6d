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


def _is_url(s: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*://", s)) or bool(re.match(r"^[\w.-]+@[\w.-]+:", s))


def repo_name(source: str) -> str:
    base = source.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return re.sub(r"\.git$", "", base) or "repo"


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
        msg = (exc.stderr or str(exc)).strip().splitlines()
        raise (InfraError if _is_url(source) else UserError)(
            f"cannot clone {source}: {msg[-1] if msg else exc}") from None
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
        repo.git.checkout("--force", "--detach", commit.hexsha)
        return Source(repo=repo_id, name=repo_name(repo_id), commit=commit.hexsha,
                      commit_date=commit.committed_datetime.isoformat(), path=dest)
    finally:
        repo.close()
