"""pytest plugin loaded first (-p tf_guard) in every taskforge test run.

It reports each test phase as a JSON line on a private pipe to the runner
(never a file the code under test could rewrite) and watches for tampering
from inside the test process:
  - pytest/unittest internals replaced after start-up (monkeypatching);
  - plugins or hook implementations registered from package code;
  - package code opening test files while tests run (reading the hidden tests);
  - package code resolving or connecting to a non-loopback host.
An attacker in the same process can still defeat an in-process guard; that is
why grading also checks canary tests, exit codes and the expected test set.
"""
import json
import os
import sys

_FD = int(os.environ.pop("TF_RESULT_FD", "-1"))
_write, _dumps, _getframe = os.write, json.dumps, sys._getframe
_WS = "/workspace/"
_state = {"phase": None, "flags": set(), "config": None}


def _emit(obj) -> None:
    if _FD >= 0:
        try:
            _write(_FD, (_dumps(obj) + "\n").encode())
        except OSError:
            pass


def _flag(kind: str, detail: str) -> None:
    key = (kind, detail)
    if key not in _state["flags"] and len(_state["flags"]) < 50:
        _state["flags"].add(key)
        _emit({"$report_type": "Tamper", "kind": kind, "detail": detail[:300]})


def _is_test_file(path: str) -> bool:
    rel = path[len(_WS):] if path.startswith(_WS) else path
    parts = rel.split("/")
    name = parts[-1]
    return (name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")
            or any(p in ("tests", "test", "testing") for p in parts[:-1]))


def _package_frame():
    """The innermost frame running package (non-test) code from the workspace."""
    f = _getframe(2)
    while f is not None:
        fn = f.f_code.co_filename
        if fn.startswith(_WS) and not _is_test_file(fn):
            return fn
        f = f.f_back
    return None


def _audit(event, args):
    if _state["phase"] != "call":
        return
    if event == "open":
        path = args[0]
        if isinstance(path, bytes):
            path = path.decode("utf-8", "replace")
        if isinstance(path, str) and path.startswith(_WS) and path.endswith(".py") \
                and _is_test_file(path):
            who = _package_frame()
            if who:
                _flag("read-test-file", f"{who} opened {path}")
    elif event in ("socket.connect", "socket.getaddrinfo"):
        host = args[1] if event == "socket.connect" else args[0]
        if isinstance(host, tuple):
            host = host[0] if host else ""
        host = str(host)
        if host not in ("127.0.0.1", "localhost", "::1", "") and not host.startswith("127."):
            who = _package_frame()
            if who:
                _flag("network", f"{who} tried to reach {host}")


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


_BASELINE = {}


def _check_integrity():
    try:
        now = _critical()
    except Exception as exc:  # a module of pytest's removed or broken
        _flag("runner-patched", f"pytest internals unreadable: {exc!r}")
        return
    for k, v in _BASELINE.items():
        if now.get(k) != v:
            _flag("runner-patched", f"{k} was replaced")


def _check_plugins(config):
    for name, plugin in config.pluginmanager.list_name_plugin():
        fn = getattr(plugin, "__file__", None) or getattr(
            sys.modules.get(getattr(plugin, "__module__", ""), None), "__file__", None) or ""
        if fn.startswith(_WS) and not os.path.basename(fn) == "conftest.py":
            _flag("plugin-from-package", f"plugin {name} registered from {fn}")


def pytest_configure(config):
    _BASELINE.update(_critical())
    _state["config"] = config
    sys.addaudithook(_audit)


def pytest_collection_finish(session):
    _check_plugins(session.config)
    _check_integrity()


def pytest_runtest_setup(item):
    _state["phase"] = "setup"


def pytest_runtest_call(item):
    _state["phase"] = "call"


def pytest_runtest_teardown(item):
    _state["phase"] = "teardown"


def pytest_runtest_logreport(report):
    ev = {"$report_type": "TestReport", "nodeid": report.nodeid, "when": report.when,
          "outcome": report.outcome, "duration": getattr(report, "duration", 0.0)}
    if hasattr(report, "wasxfail"):
        ev["wasxfail"] = True
    if report.failed and report.longrepr is not None:
        ev["longrepr"] = str(report.longrepr)[-600:]
    _emit(ev)
    if report.when == "teardown":
        _state["phase"] = None
        _check_integrity()


def pytest_collectreport(report):
    if report.failed:
        _emit({"$report_type": "CollectReport", "nodeid": report.nodeid, "outcome": "failed",
               "longrepr": str(report.longrepr)[-600:]})


def pytest_sessionfinish(session, exitstatus):
    _check_plugins(session.config)
    _check_integrity()
    _emit({"$report_type": "SessionFinish", "exitstatus": int(exitstatus)})
