"""The sandbox suite code runs in on PostgreSQL: the run's roles, the checker's gate, and each
app's database.

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
Every statement runs under a deadline kept outside the session (`deadline`).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from secbench_tui.core.verify.deadline import ADMIN_SECONDS, Watchdog, connect_admin
from secbench_tui.core.verify.server import ServerError

CASE_SCHEMA = "case_code"
GATE_EXEC = "secbench_gate_exec"
GATE_QUERY = "secbench_gate_query"
GATE_ERROR = "SB001"  # SQLSTATE of a gate call without the token: never a refusal


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
        """After a case that ran code of its own (a Python case): `role` gets a new password,
        loses the settings it gave itself (`ALTER ROLE CURRENT_USER SET ...`, committed, would
        hold in every later session of it, SQL apps' too), and every session of it, on any
        database, ends. A process the case left behind loses its session (and its locks) and
        cannot log in again."""
        role.password = secrets.token_urlsafe(24)
        name, db = sql.Identifier(role.name), sql.Identifier(self.name)
        with self._admin() as admin:
            admin.execute(
                sql.SQL("ALTER ROLE {} PASSWORD {}").format(name, sql.Literal(role.password))
            )
            admin.execute(sql.SQL("ALTER ROLE {} RESET ALL").format(name))
            admin.execute(sql.SQL("ALTER ROLE {} IN DATABASE {} RESET ALL").format(name, db))
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                [role.name],
            )
