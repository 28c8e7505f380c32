"""The child process a Python app's suite code runs in: never the tool's own process.

`python -m secbench_tui.core.verify.python_child` is started once per app, with an
environment stripped of the user's secrets (no API keys) and a temporary working folder. It
imports FastAPI and SQLAlchemy once, then for each case the parent sends (one JSON line on
stdin) it forks a fresh process that loads the harness (`verify/app.py`) and the case's code,
runs every parameter set on the database as the unprivileged case role, and writes one JSON
line per parameter set. The fork gets a session of its own, an empty working folder, stdin,
stdout and stderr on /dev/null, and a deadline per parameter set: when it passes, the whole
process group is killed and the remaining parameter sets fail with the deadline's message.

The fork is not a security boundary against its own results: code that runs in it could
forge them. What it cannot do is run in the tool's process, outlive its deadline, or reach
the database as anything but the case role (the checker's gate needs this database's token,
which a hostile harness could read from the fork's memory, so the property of a Python app
is only as trustworthy as the suite's Python code: see docs/verify.md, "The sandbox").
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import os
import select
import signal
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any, TypedDict, TypeGuard

from secbench_tui.core.models import JSONObject
from secbench_tui.core.verify.execution import Execution, Parameters, ResultSetRow, json_value
from secbench_tui.core.verify.stopping import Stop


class CaseJob(TypedDict):
    """One case for the child: where its database is, the scenario, the code to serve."""

    conninfo: str
    token: str
    case_id: str
    code: str
    scenario: str  # the scenario file's absolute path
    sequences: list[list[int]]  # the fixtures' sequences: oid, value, is_called (0 or 1)
    # the scenario's parameter sets and the rows added before `# Setup` (an exploit's: its
    # own parameter set, which the file does not hold)
    parameters: list[Parameters]
    added_rows: list[tuple[str, dict[str, object]]]


class Job(CaseJob):
    """A case as sent (one JSON line): with the limits each parameter set runs under."""

    deadline: float
    grace: float
    rows: int
    count: int
    startup: float


def _preload() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import fastapi  # noqa: F401
        import fastapi.testclient  # noqa: F401
        import pglast.parser  # noqa: F401
        import sqlalchemy  # noqa: F401
        import sqlalchemy.orm  # noqa: F401


_CONNINFO = [""]
_ENGINE: list[Any] = []


def _engine() -> Any:
    """One SQLAlchemy engine for every fork, its dialect set up once in the parent process."""
    if not _ENGINE:
        import psycopg
        from sqlalchemy import create_engine
        from sqlalchemy.pool import StaticPool

        _ENGINE.append(
            create_engine(
                "postgresql+psycopg://",
                creator=lambda: psycopg.connect(
                    _CONNINFO[0], prepare_threshold=None, connect_timeout=10
                ),
                poolclass=StaticPool,
            )
        )
    return _ENGINE[0]


def _warm(harness: ModuleType, conninfo: str) -> None:
    """Before the first fork: do once what every fork would otherwise do again (connect and
    set up the dialect, configure the harness's mappers, build an app, make a request)."""
    from sqlalchemy.orm import configure_mappers

    from secbench_tui.core.verify import python_app

    _CONNINFO[0] = conninfo
    try:
        engine = _engine()
        with engine.connect():
            pass
        engine.dispose()
        configure_mappers()
        handler = python_app.HandlerApp(harness, "", "warm-up")
        if handler.client is not None:
            handler.client.get("/")
        handler.close()
    except Exception:  # the forks will meet the same problem, and report it
        pass


def _run_job(harness: ModuleType, job: Job, out_fd: int) -> None:
    """In the fork: run one case on every parameter set, one JSON line each."""

    from secbench_tui.core.verify import python_app
    from secbench_tui.core.verify.data import parse_scenario
    from secbench_tui.core.verify.deadline import Limits, Watchdog

    scenario = replace(
        parse_scenario(Path(job["scenario"])),
        parameters=tuple(job["parameters"]),
        rows=tuple((str(table), dict(values)) for table, values in job["added_rows"]),
    )
    limits = Limits(deadline=job["deadline"], rows=job["rows"])
    watchdog = Watchdog(None, limits)

    def write(execution: Execution) -> None:
        line = json.dumps(json_value(dataclasses.asdict(execution)), default=str) + "\n"
        os.write(out_fd, line.encode())

    _CONNINFO[0] = job["conninfo"]
    engine = _engine()
    handler = python_app.HandlerApp(harness, job["code"], job["case_id"])
    sequences = [(int(oid), int(value), bool(called)) for oid, value, called in job["sequences"]]
    try:
        for index in range(len(scenario.parameters)):
            write(
                python_app.run_case(
                    engine, handler, scenario, index, job["token"], watchdog, sequences
                )
            )
    finally:
        handler.close()
        engine.dispose()


def _fork(harness: ModuleType, job: Job) -> tuple[int, int]:
    """(pid, read end of the fork's result pipe)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid:
        os.close(write_fd)
        return pid, read_fd
    try:  # the fork: a session of its own, an empty folder, no terminal, no other files
        os.close(read_fd)
        os.setsid()
        folder = tempfile.mkdtemp(prefix="secbench-verify-case-")
        os.chdir(folder)
        os.environ["HOME"] = os.environ["TMPDIR"] = folder
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, write_fd)
        os.closerange(write_fd + 1, 1024)
        _run_job(harness, job, write_fd)
    except BaseException:
        pass
    os._exit(0)


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass


def _relay(harness: ModuleType, job: Job) -> None:
    """Fork for `job`, pass its lines on, and enforce the deadline of each parameter set."""
    count, deadline = job["count"], job["deadline"] + job["grace"]
    pid, read_fd = _fork(harness, job)
    _say({"fork": pid})  # the parent kills its group should we die before reaping it
    done, buffer = 0, b""
    reason = None
    limit = time.monotonic() + deadline + job["startup"]
    try:
        while done < count:
            left = limit - time.monotonic()
            ready = select.select([read_fd], [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                reason = f"did not finish within the {job['deadline']:g} s deadline (killed)"
                break
            chunk = os.read(read_fd, 65536)
            if not chunk:
                reason = "the child process ended without a result (exit, crash or kill)"
                break
            buffer += chunk
            while b"\n" in buffer and done < count:
                line, buffer = buffer.split(b"\n", 1)
                sys.stdout.write(line.decode(errors="replace") + "\n")
                sys.stdout.flush()
                done += 1
                limit = time.monotonic() + deadline
    finally:
        os.close(read_fd)
        _kill(pid)
    for index in range(done, count):
        sys.stdout.write(json.dumps(dataclasses.asdict(Execution(index, error=reason))) + "\n")
    sys.stdout.write(json.dumps({"done": True}) + "\n")
    sys.stdout.flush()


def main() -> None:
    """argv[1]: the harness. Loads it once (suite code, here and never in the tool's process),
    says whether it loaded, then runs the cases sent on stdin."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops us
    try:
        _preload()
    except ImportError as exc:
        _say({"ready": False, "missing": str(exc)})
        return
    from secbench_tui.core.verify import python_app

    try:
        harness = python_app.load_harness(Path(sys.argv[1]))
    except BaseException as exc:  # the suite's harness is suite code: its failure is data
        _say({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    _say({"ready": True})
    for line in sys.stdin:
        if line.strip():
            job = json.loads(line)
            if not _ENGINE:
                _warm(harness, job["conninfo"])
                gc.freeze()  # the forks then share these objects instead of copying them
            _relay(harness, job)


def _say(message: JSONObject) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()


# The parent's end ---------------------------------------------------------------------------

_KEPT_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "SYSTEMROOT", "TZ")
STARTUP_SECONDS = 60.0  # importing FastAPI and SQLAlchemy on a busy machine


class ChildError(Exception):
    """The child could not start; `missing` when the verify extra is not installed."""

    def __init__(self, message: str, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


class PythonChild:
    """The tool's handle on one app's child process (see the module docstring)."""

    def __init__(
        self,
        harness: Path,
        deadline: float,
        grace: float,
        rows: int,
        startup: float = 10.0,
        stop: Stop | None = None,
    ) -> None:
        self.harness, self.deadline, self.grace, self.rows = harness, deadline, grace, rows
        self.startup = startup  # before the first parameter set's deadline (Limits.startup)
        self._stop = stop if stop is not None else Stop()  # kills the child at once
        self.folder = tempfile.TemporaryDirectory(prefix="secbench-verify-py-")
        self.proc: Any = None
        self._buffer = b""
        self._fork: int | None = None

    def start(self) -> None:
        import subprocess

        env = {k: os.environ[k] for k in _KEPT_ENVIRONMENT if k in os.environ}
        env["HOME"] = env["TMPDIR"] = self.folder.name
        self.proc = subprocess.Popen(
            [sys.executable, "-m", __name__, str(self.harness.resolve())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self.folder.name,
            env=env,
            start_new_session=True,  # Ctrl+C in the terminal reaches us; we stop the child
        )
        try:
            with self._stop.ending(self._kill):
                hello = self._line(STARTUP_SECONDS)
            self._stop.check()
        except BaseException:  # a stop (or Ctrl+C) while it starts: it is not left running
            self.stop()
            raise
        if hello is None:
            self.stop()
            raise ChildError("the Python child process did not start")
        message = json.loads(hello)
        if not message.get("ready"):
            self.stop()
            if "missing" in message:
                raise ChildError(message["missing"], missing=True)
            raise ChildError(f"{self.harness} does not load: {message.get('error')}")

    def _line(self, timeout: float) -> str | None:
        limit = time.monotonic() + timeout
        stdout = self.proc.stdout
        while b"\n" not in self._buffer:
            left = limit - time.monotonic()
            if left <= 0 or not select.select([stdout], [], [], left)[0]:
                return None
            chunk = os.read(stdout.fileno(), 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode(errors="replace")

    def run(self, case: CaseJob, count: int) -> list[Execution]:
        """Every parameter set of one case; the child is restarted next time if it failed."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        job: Job = {
            **case,
            "deadline": self.deadline,
            "grace": self.grace,
            "rows": self.rows,
            "count": count,
            "startup": self.startup,
        }
        self.proc.stdin.write((json.dumps(job) + "\n").encode())
        self.proc.stdin.flush()
        with self._stop.ending(self._kill):
            results = self._results(count)
        self._stop.check()  # (what a killed child said is no result)
        for index in range(len(results), count):
            results.append(Execution(index, error="the Python child process stopped answering"))
        return results

    def _results(self, count: int) -> list[Execution]:
        results: list[Execution] = []
        budget = 10.0 + count * (self.deadline + self.grace) + 10.0
        while True:
            line = self._line(budget)
            if line is None:
                self.stop()
                break
            try:
                said = json.loads(line)
            except (ValueError, RecursionError):  # the case's process can write here too
                said = None
            message: JSONObject = (
                said
                if isinstance(said, dict)
                else {"error": "the Python child process answered nonsense"}
            )
            if "fork" in message:
                fork = message["fork"]
                self._fork = fork if _whole(fork) else None
                continue
            if message.get("done"):
                self._fork = None  # reaped by the child
                break
            if len(results) < count:
                results.append(_execution(message, len(results)))
        return results

    def _kill(self) -> None:
        """On a stop, from another thread: the child's and its case's process groups killed
        (`stop()`, in the thread that reads from it, then reaps them)."""
        proc, fork = self.proc, self._fork
        for group in (proc.pid if proc is not None else None, fork):
            if group is not None:
                with contextlib.suppress(OSError):
                    os.killpg(group, signal.SIGKILL)

    def stop(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            self.proc.wait()
            if self._fork is not None:  # a case's process the child had no time to reap
                try:
                    os.killpg(self._fork, signal.SIGKILL)
                except OSError:
                    pass
                self._fork = None
            for stream in (self.proc.stdin, self.proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            self.proc = None
        self._buffer = b""

    def close(self) -> None:
        self.stop()
        self.folder.cleanup()


def _execution(message: JSONObject, index: int) -> Execution:
    """A result line as an `Execution`, each field of the type it must have: the lines come
    through a pipe the case's process (suite code) could also write to."""
    nonsense = Execution(index, error="the Python child process answered nonsense")
    at, rows, violations = (
        message.get("params_index"),
        message.get("rows", []),
        message.get("violations", []),
    )
    affected, refused = message.get("affected", 0), message.get("refused", False)
    status, error = message.get("status"), message.get("error")
    if not _whole(at) or not _whole(affected) or not isinstance(refused, bool):
        return nonsense
    if not (status is None or _whole(status)) or not (error is None or isinstance(error, str)):
        return nonsense
    if not _rows(rows) or not _rows(violations):
        return nonsense
    return Execution(
        at,
        rows=rows,
        affected=affected,
        refused=refused,
        status=status,
        error=error,
        violations=violations,
        compared=message.get("compared"),
    )


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _rows(value: object) -> TypeGuard[list[ResultSetRow]]:
    return isinstance(value, list) and all(isinstance(row, dict) for row in value)
