"""The sandbox suite code runs in on PostgreSQL, and the deadline it runs under.

A verification creates two roles of its own (dropped afterwards), neither a superuser, neither
able to create roles, databases, schemas or extensions, neither a member of any role (so not of
pg_read_server_files, pg_write_server_files or pg_execute_server_program):

- the *checker* owns each app database's `public` schema. It loads the fixtures, and it runs a
  scenario's `# Setup`, `# Verify` and `# Property`, through two SECURITY DEFINER functions
  (`secbench_gate_exec`, `secbench_gate_query`) that refuse any caller without this database's
  secret token, with `search_path` pinned to `public, pg_temp` (a case's temporary tables come
  after the fixtures' tables, its functions are never seen);
- the *case* role logs in to run a case's code and `# Run`. It may read and write the rows of
  the fixtures' tables and create objects in a schema of its own (`case_code`, first on its
  search path); it cannot alter, drop or replace what the checker owns.

Each app gets a fresh database (a random name, quoted by the driver), dropped afterwards.
Every statement runs under a deadline kept by a `Watchdog` outside the session: it cancels the
statement, then ends the session if the cancel was caught, so nothing a suite sets can lift it.
"""

from __future__ import annotations

import heapq
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from secbench_tui.core.verify.server import ServerError
from secbench_tui.core.verify.stopping import Stop, Stopped

CASE_SCHEMA = "case_code"
GATE_EXEC = "secbench_gate_exec"
GATE_QUERY = "secbench_gate_query"
GATE_ERROR = "SB001"  # SQLSTATE of a gate call without the token: never a refusal


@dataclass(frozen=True)
class Limits:
    deadline: float = 10.0  # seconds per statement, fixtures included
    rows: int = 10_000  # rows a statement may return; one more fails the case
    grace: float = 2.0  # after the cancel, seconds before the session is ended
    # a Python case's fresh process may take this long to load its code before the deadline of
    # its first parameter set starts (imports on a busy machine)
    startup: float = 10.0


# Each statement verify runs on a connection of its own (creating and dropping databases and
# roles, reading the tables after a Python case) ends within this (a database is created in
# well under a second, or a few on a busy machine), and waits no longer than the deadline for
# a lock: a lock a case's process still holds never stalls verify.
ADMIN_SECONDS = 60.0


def connect_admin(
    uri: str, lock_seconds: float, dbname: str | None = None
) -> psycopg.Connection[Any]:
    """A connection of verify's own, as the server's administrator (autocommit)."""
    options = str(conninfo_to_dict(uri).get("options") or "")
    timeouts = (
        f"-c statement_timeout={round(ADMIN_SECONDS * 1000)} "
        f"-c lock_timeout={round(lock_seconds * 1000)}"
    )
    extra = {"dbname": dbname} if dbname else {}
    conninfo = make_conninfo(uri, options=f"{options} {timeouts}".strip(), **extra)
    return psycopg.connect(conninfo, autocommit=True, connect_timeout=10)


class DeadlineExceeded(Exception):
    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"did not finish within the {seconds:g} s deadline (stopped from outside the "
            "session; --verify-deadline sets it)"
        )


class SandboxError(ServerError):
    """The server would not set up the sandbox; the message says what it refused."""


@dataclass
class Role:
    name: str
    password: str  # changed when a case may have left a process that knows it


@dataclass(frozen=True)
class Roles:
    checker: Role
    case: Role


def _role(tag: str, kind: str) -> Role:
    return Role(f"secbench_{tag}_{kind}", secrets.token_urlsafe(24))


@contextmanager
def sandbox_roles(admin_uri: str) -> Iterator[Roles]:
    """The run's two roles; dropped on exit (after the databases that use them)."""
    tag = secrets.token_hex(4)
    roles = Roles(_role(tag, "checker"), _role(tag, "case"))
    created: list[Role] = []
    try:
        with connect_admin(admin_uri, ADMIN_SECONDS) as admin:
            for role in (roles.checker, roles.case):
                admin.execute(
                    sql.SQL(
                        "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT "
                        "NOREPLICATION NOBYPASSRLS PASSWORD {}"
                    ).format(sql.Identifier(role.name), sql.Literal(role.password))
                )
                created.append(role)
    except BaseException as exc:  # Ctrl+C between two roles too: drop what was made
        _drop_roles(admin_uri, [roles.checker, roles.case], quiet=True)
        if not isinstance(exc, psycopg.Error):
            raise
        raise SandboxError(
            f"cannot create the verification's roles ({exc.diag.message_primary or exc}); "
            "--pg-url needs a role with CREATEROLE and CREATEDB, or a superuser"
        ) from exc
    try:
        yield roles
    except BaseException:
        _drop_roles(admin_uri, created, quiet=True)  # do not hide the error in flight
        raise
    _drop_roles(admin_uri, created)


def _drop_roles(admin_uri: str, roles: list[Role], quiet: bool = False) -> None:
    if not roles:
        return
    try:
        with connect_admin(admin_uri, ADMIN_SECONDS) as admin:
            for role in roles:
                admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role.name)))
    except psycopg.Error as exc:
        if not quiet:
            names = ", ".join(r.name for r in roles)
            raise SandboxError(
                f"cannot drop the verification's roles {names} ({exc}): drop them by hand"
            ) from exc


def _gate_sql(token: str, case_role: str) -> sql.Composed:
    digest = sql.Literal("\\x" + _sha256(token))
    return sql.SQL(
        """
CREATE FUNCTION public.{exec}(token text, statement text, args jsonb DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $gate$
BEGIN
  IF sha256(convert_to(token, 'UTF8')) IS DISTINCT FROM {digest}::bytea THEN
    RAISE EXCEPTION 'only the verifier may run the checker' USING ERRCODE = {code};
  END IF;
  EXECUTE statement USING args;
END $gate$;
CREATE FUNCTION public.{query}(token text, query text, cap int) RETURNS SETOF jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $gate$
BEGIN
  IF sha256(convert_to(token, 'UTF8')) IS DISTINCT FROM {digest}::bytea THEN
    RAISE EXCEPTION 'only the verifier may run the checker' USING ERRCODE = {code};
  END IF;
  RETURN QUERY EXECUTE 'SELECT to_jsonb(q) FROM (' || query || E'\n) q LIMIT ' || cap;
END $gate$;
REVOKE ALL ON FUNCTION public.{exec}(text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION public.{query}(text, text, int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION public.{exec}(text, text, jsonb) TO {case};
GRANT EXECUTE ON FUNCTION public.{query}(text, text, int) TO {case};
GRANT USAGE ON SCHEMA public TO {case};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {case};
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {case};
"""
    ).format(
        exec=sql.Identifier(GATE_EXEC),
        query=sql.Identifier(GATE_QUERY),
        digest=digest,
        code=sql.Literal(GATE_ERROR),
        case=sql.Identifier(case_role),
    )


def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


class Watchdog:
    """Keeps the deadline of statements on a connection, from outside its session, and ends
    them at once on a stop (`stop`: Ctrl+C, SIGTERM, the app's stop).

    Without `admin_uri` (in the Python child, which holds no administrator's secret) it only
    cancels; the parent ends the child, and its sessions, when the cancel was caught.

    One thread of its own keeps every deadline (a verification runs thousands of statements,
    and a pair of timer threads for each cost more than the statements); what a deadline does
    when it passes (cancel, terminate) runs in a thread of its own, so a slow cancel never
    delays another statement's deadline."""

    def __init__(self, admin_uri: str | None, limits: Limits, stop: Stop | None = None) -> None:
        self.admin_uri = admin_uri
        self.limits = limits
        self.stop = stop if stop is not None else Stop()
        self._clock = _Alarms()

    @contextmanager
    def limit(self, conn: psycopg.Connection[Any]) -> Iterator[None]:
        """Raises DeadlineExceeded past the deadline, and Stopped once a stop was asked (at
        the start of the statement, or as it ends it)."""
        pid = conn.info.backend_pid
        lock = threading.Lock()
        state = {"done": False, "fired": False}

        def cancel() -> None:
            with lock:
                if state["done"]:
                    return
                state["fired"] = True
                try:
                    conn.cancel_safe(timeout=self.limits.grace)
                except Exception:  # the terminate below still comes
                    pass

        def terminate() -> None:  # the cancel was caught (EXCEPTION WHEN query_canceled)
            with lock:
                if state["done"] or self.admin_uri is None:
                    return
                try:
                    with connect_admin(self.admin_uri, self.limits.grace) as a:
                        a.execute("SELECT pg_terminate_backend(%s)", [pid])
                except psycopg.Error:
                    pass

        def stopped() -> None:
            cancel()
            time.sleep(self.limits.grace)
            terminate()

        alarms = [
            self._clock.set(self.limits.deadline, cancel),
            self._clock.set(self.limits.deadline + self.limits.grace, terminate),
        ]
        try:
            with self.stop.ending(stopped):
                yield
        except psycopg.Error as exc:
            if self.stop.is_set():
                raise Stopped from exc
            if state["fired"]:
                raise DeadlineExceeded(self.limits.deadline) from exc
            raise
        finally:
            with lock:
                state["done"] = True
            for alarm in alarms:
                self._clock.clear(alarm)
        self.stop.check()
        if state["fired"]:
            raise DeadlineExceeded(self.limits.deadline)


class _Alarm:
    __slots__ = ("due", "action", "cleared")

    def __init__(self, due: float, action: Callable[[], None]) -> None:
        self.due, self.action, self.cleared = due, action, False

    def __lt__(self, other: _Alarm) -> bool:
        return self.due < other.due


# Taken by the first alarm of an `_Alarms` in a process; made anew in a forked child, where
# a lock some other thread of the parent held would stay held for ever.
_STARTING = threading.Lock()


def _new_starting_lock() -> None:
    global _STARTING
    _STARTING = threading.Lock()


os.register_at_fork(after_in_child=_new_starting_lock)


class _Alarms:
    """Actions due after a delay, kept by one daemon thread (started at the first alarm, and
    again in a forked process, which inherits the list but not the thread). A cleared alarm
    stays in the heap until it comes to the top, where it is dropped unrun."""

    def __init__(self) -> None:
        self._owner = -1

    def _start(self) -> None:
        self._due: list[_Alarm] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._keep, name="secbench-watchdog", daemon=True).start()
        self._owner = os.getpid()  # last: another thread sees it only once all is ready

    def set(self, delay: float, action: Callable[[], None]) -> _Alarm:
        if self._owner != os.getpid():
            with _STARTING:  # threads arming the first alarm at once start one keeper
                if self._owner != os.getpid():
                    self._start()
        alarm = _Alarm(time.monotonic() + delay, action)
        with self._changed:
            heapq.heappush(self._due, alarm)
            if self._due[0] is alarm:
                self._changed.notify()
        return alarm

    def clear(self, alarm: _Alarm) -> None:
        alarm.cleared = True

    def _keep(self) -> None:
        due, changed = self._due, self._changed
        while True:
            with changed:
                while due and due[0].cleared:
                    heapq.heappop(due)
                if not due:
                    changed.wait()
                    continue
                wait = due[0].due - time.monotonic()
                if wait > 0:
                    changed.wait(wait)
                    continue
                alarm = heapq.heappop(due)
            threading.Thread(target=alarm.action, daemon=True).start()


# Objects in the case's schema, by kind (none outlive a case: its transaction is rolled back).
CASE_OBJECTS = """
SELECT count(*) FROM pg_catalog.pg_class WHERE relnamespace = %s::regnamespace
UNION ALL SELECT count(*) FROM pg_catalog.pg_proc WHERE pronamespace = %s::regnamespace
UNION ALL SELECT count(*) FROM pg_catalog.pg_type WHERE typnamespace = %s::regnamespace
UNION ALL SELECT count(*) FROM pg_catalog.pg_operator WHERE oprnamespace = %s::regnamespace
"""


class AppDatabase:
    """One app's database in the sandbox, with its fixtures loaded by the checker.

    `rebuild()` starts over from the fixtures: for when a case's changes outlived it."""

    def __init__(self, admin_uri: str, roles: Roles, watchdog: Watchdog) -> None:
        self.admin_uri = admin_uri
        self.roles = roles
        self.watchdog = watchdog
        self.name = f"secbench_verify_{secrets.token_hex(6)}"
        self.token = secrets.token_urlsafe(32)
        self.exists = False
        # the fixtures' sequences (oid, value, is_called), reset before every parameter set
        self.sequences: list[tuple[int, int, bool]] = []

    def conninfo(self, role: Role, **extra: Any) -> str:
        return make_conninfo(
            self.admin_uri, user=role.name, password=role.password, dbname=self.name, **extra
        )

    @property
    def case_conninfo(self) -> str:
        return self.conninfo(self.roles.case, options=f"-c search_path={CASE_SCHEMA},public")

    @property
    def checker_conninfo(self) -> str:
        return self.conninfo(self.roles.checker)

    def _admin(self, here: bool = False) -> psycopg.Connection[Any]:
        """verify's own connection: to the server, or `here` to this database."""
        lock = self.watchdog.limits.deadline
        return connect_admin(self.admin_uri, lock, self.name if here else None)

    def create(self) -> None:
        db, checker, case = (
            sql.Identifier(self.name),
            sql.Identifier(self.roles.checker.name),
            sql.Identifier(self.roles.case.name),
        )
        with self._admin() as admin:
            self.exists = True  # (drop() says IF EXISTS: an interrupted CREATE is covered)
            # template0 takes no connections: nobody can keep the copy from being made
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(db))
            admin.execute(sql.SQL("REVOKE ALL ON DATABASE {} FROM PUBLIC").format(db))
            admin.execute(
                sql.SQL("GRANT CONNECT, TEMPORARY ON DATABASE {} TO {}, {}").format(
                    db, checker, case
                )
            )
        with self._admin(here=True) as admin:
            admin.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
            admin.execute(sql.SQL("ALTER SCHEMA public OWNER TO {}").format(checker))
            admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(CASE_SCHEMA)))
            admin.execute(
                sql.SQL("GRANT USAGE, CREATE ON SCHEMA {} TO {}").format(
                    sql.Identifier(CASE_SCHEMA), case
                )
            )

    def install_gate(self, conn: psycopg.Connection[Any]) -> None:
        """Run by the checker once the fixtures are in: the gate, and the case role's grants."""
        with self.watchdog.limit(conn):
            conn.execute(_gate_sql(self.token, self.roles.case.name))

    def drop(self) -> None:
        if not self.exists:
            return
        with self._admin() as admin:
            # no new session (a process the case left would come back), then the rest ended
            admin.execute(
                sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(
                    sql.Identifier(self.name)
                )
            )
            prepared = admin.execute(
                "SELECT gid FROM pg_prepared_xacts WHERE database = %s", [self.name]
            ).fetchall()
            for (gid,) in prepared:  # PREPARE TRANSACTION would keep the database alive
                admin.execute(sql.SQL("ROLLBACK PREPARED {}").format(sql.Literal(gid)))
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(self.name))
            )
        self.exists = False

    def fingerprint(self) -> list[tuple[str, str]]:
        """A digest of every row of every table in `public`, and of the objects in the case's
        schema (empty unless something committed them): to see that nothing was committed.
        psycopg.Error (a lock timeout) when a process holds a table past the deadline."""
        with self._admin(here=True) as admin:
            tables = admin.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
            ).fetchall()
            objects = admin.execute(CASE_OBJECTS, [CASE_SCHEMA] * 4).fetchall()
            found = [("(objects of the case role)", str(row[0])) for row in objects]
            if not tables:
                return found
            parts = [
                sql.SQL(
                    "SELECT {name}, md5(coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), ''))"
                    " FROM public.{table} t"
                ).format(name=sql.Literal(name), table=sql.Identifier(name))
                for (name,) in tables
            ]
            rows = admin.execute(sql.SQL(" UNION ALL ").join(parts)).fetchall()
        return found + [(str(a), str(b)) for a, b in rows]

    def lock_out(self, role: Role) -> None:
        """After a case that ran code of its own (a Python case): `role` gets a new password
        and every session of it, on any database, ends. A process the case left behind
        loses its session (and its locks) and cannot log in again."""
        role.password = secrets.token_urlsafe(24)
        with self._admin() as admin:
            admin.execute(
                sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    sql.Identifier(role.name), sql.Literal(role.password)
                )
            )
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                [role.name],
            )
