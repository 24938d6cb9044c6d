"""pytest plugin of every taskforge test run: report each phase as one JSON line.

Loaded from its file by tfboot.py (or with `-p tf_guard` in the naive runner).
The lines go to a private pipe of the supervisor, never to a file or a stream
the host reads. They are claims: the host parses them against a schema, in
order, and fails closed on anything else (taskforge/grade/events.py); what
makes them trustworthy is that the hidden tests sit among copies that no
forged report can tell apart (taskforge/grade/copies.py).

Also reported, as Monitor lines: pytest internals replaced while tests run, and
plugins registered from package code.
"""
import json
import os
import sys

import pytest

_FD = int(os.environ.pop("TF_RESULT_FD", "-1"))
_write, _dumps = os.write, json.dumps
_WS = "/workspace/"
_BASELINE: dict[str, int] = {}     # what _critical() returned at configure


def _emit(obj) -> None:
    if _FD < 0:
        return
    data = (_dumps(obj) + "\n").encode()
    try:
        while data:
            data = data[_write(_FD, data):]
    except OSError:
        pass


def _flag(kind: str, detail: str, site: str) -> None:
    """A Monitor line. `site` names what was found (a plugin's file, a replaced
    internal), so that a task whose gold does the same can exempt exactly that."""
    _emit({"$report_type": "Monitor", "kind": kind, "site": site[:200], "detail": detail[:200]})


def _critical():
    """Identities of the functions that decide and report outcomes."""
    import unittest

    import _pytest.main
    import _pytest.python
    import _pytest.reports
    import _pytest.runner

    items = {
        "runner.call_and_report": _pytest.runner.call_and_report,
        "runner.runtestprotocol": _pytest.runner.runtestprotocol,
        "runner.CallInfo.from_call": _pytest.runner.CallInfo.__dict__.get("from_call"),
        "reports.TestReport.from_item_and_call":
            _pytest.reports.TestReport.__dict__.get("from_item_and_call"),
        "reports.TestReport.__init__": _pytest.reports.TestReport.__init__,
        "python.Function.runtest": _pytest.python.Function.runtest,
        "main.Session.perform_collect": _pytest.main.Session.perform_collect,
        "unittest.TestCase.run": unittest.TestCase.run,
        "unittest.TestCase.__call__": unittest.TestCase.__call__,
        "sys.exit": sys.exit,
        "os._exit": os._exit,
    }
    try:
        import _pytest.unittest

        items["unittest.TestCaseFunction.runtest"] = _pytest.unittest.TestCaseFunction.runtest
    except (ImportError, AttributeError):
        pass
    return {k: id(v) for k, v in items.items()}


def _check_integrity():
    try:
        now = _critical()
    except Exception as exc:  # a module of pytest's removed or broken
        _flag("runner-patched", f"pytest internals unreadable: {exc!r}", "pytest")
        return
    for k, v in _BASELINE.items():
        if now.get(k) != v:
            _flag("runner-patched", f"{k} was replaced", k)


def _check_plugins(config):
    # Plugins named with -p are the supervisor's choice (installed entry points,
    # the repository's own among them), not the solution's.
    chosen = set(getattr(config.option, "plugins", None) or [])
    for name, plugin in config.pluginmanager.list_name_plugin():
        if name in chosen:
            continue
        fn = getattr(plugin, "__file__", None) or getattr(
            sys.modules.get(getattr(plugin, "__module__", ""), None), "__file__", None) or ""
        if fn.startswith(_WS) and not os.path.basename(fn) == "conftest.py":
            _flag("plugin-from-package", f"plugin {name} registered from {fn}", fn[len(_WS):])


def pytest_configure(config):
    _BASELINE.update(_critical())


def pytest_sessionstart(session):
    _emit({"$report_type": "SessionStart", "pid": os.getpid()})


def pytest_collection_finish(session):
    _check_plugins(session.config)
    _check_integrity()


def pytest_runtest_logreport(report):
    ev = {"$report_type": "TestReport", "nodeid": report.nodeid, "when": report.when,
          "outcome": report.outcome, "duration": float(getattr(report, "duration", 0.0) or 0.0)}
    if hasattr(report, "wasxfail"):
        ev["wasxfail"] = True
    if type(report).__name__ != "TestReport":       # pytest's SubtestReport and the like
        ev["subtest"] = True
    if report.failed and report.longrepr is not None:
        ev["longrepr"] = str(report.longrepr)[-600:]
    _emit(ev)
    if report.when == "teardown":
        _check_integrity()


def pytest_collectreport(report):
    if report.failed:
        _emit({"$report_type": "CollectReport", "nodeid": report.nodeid, "outcome": "failed",
               "longrepr": str(report.longrepr)[-600:]})


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    _check_plugins(session.config)
    _check_integrity()
    _emit({"$report_type": "SessionFinish", "exitstatus": int(exitstatus)})
