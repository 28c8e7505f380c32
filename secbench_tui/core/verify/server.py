"""The PostgreSQL a verification runs on: the embedded one of the `pgserver` package, or the
server of `--pg-url`; and the redaction of `--pg-url`'s secrets from everything shown.

The embedded server lives in a temporary folder that is stopped and removed on the way out,
however the way out comes (an error, Ctrl+C, or SIGTERM turned into an exception by the front
end). Before it is used, it asks every role for its password, the superuser's a secret of
this process: a case's code may find the server's socket, never a login without a secret.

Secrets: libpq and the server may echo any part of a connection string in their
messages, so `Redactor.scrub` replaces every form of the password (and of a URI's user info)
wherever it appears, and `Redactor.shown` is the string to display instead of the URL.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import unquote

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from secbench_tui.core.untrusted import redact_url
from secbench_tui.core.verify import extra
from secbench_tui.core.verify.stopping import Stop

_HIDDEN = "***"


class ServerError(Exception):
    """No PostgreSQL to verify on; the message says how to get one."""


class Redactor:
    """Hides a `--pg-url`'s secrets in every form: URI or `key=value`, well formed or not."""

    def __init__(self, pg_url: str | None) -> None:
        self.pg_url = pg_url or ""
        self.secrets = sorted(_secrets(self.pg_url), key=len, reverse=True)

    @property
    def shown(self) -> str:
        url = self.pg_url
        if not url:
            return ""
        if "://" in url:
            return self._hide(redact_url(url))
        try:
            params = conninfo_to_dict(url)
        except psycopg.Error:
            return "(the --pg-url given, not shown: it does not parse)"
        return " ".join(f"{k}={_HIDDEN if k == 'password' else v}" for k, v in params.items())

    def scrub(self, text: object) -> str:
        out = str(text)
        if self.pg_url and "://" in self.pg_url:
            out = out.replace(self.pg_url, self.shown)
        return self._hide(out)

    def _hide(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, _HIDDEN)
        return text


def _secrets(url: str) -> set[str]:
    found: set[str] = set()
    if not url:
        return found
    try:
        password = conninfo_to_dict(url).get("password")
        if password:
            found.add(str(password))
    except psycopg.Error:
        pass
    if "://" in url:  # a URI's user info, even when the URI does not parse
        rest = url.split("://", 1)[1]
        authority = rest.split("/", 1)[0].split("?", 1)[0]
        if "@" in authority:
            userinfo = authority.rsplit("@", 1)[0]
            if ":" in userinfo:  # user:password (a user name alone is no secret)
                found.add(userinfo.split(":", 1)[1])
        for pair in rest.split("?", 1)[1].split("&") if "?" in rest else ():
            name, _, value = pair.partition("=")
            if name.strip().lower() in ("password", "sslpassword") and value:
                found.add(value)
    words = url.replace("=", " = ").split()  # key = value, as libpq reads it
    for i, word in enumerate(words[:-2]):
        if word.lower() in ("password", "sslpassword") and words[i + 1] == "=":
            found.add(words[i + 2].strip("'"))
    found |= {unquote(s) for s in found}
    return {s for s in found if s}


@contextmanager
def postgres(pg_url: str | None, stop: Stop | None = None) -> Iterator[tuple[str, str]]:
    """(connection URI, description such as 'PostgreSQL 16.2 (pgserver)'). `stop.abandon()`
    (a second Ctrl+C) stops the embedded server and removes its folder at once."""
    if pg_url:
        redactor = Redactor(pg_url)
        try:
            yield pg_url, f"{_version(pg_url)} (--pg-url)"
        except ServerError as exc:
            raise ServerError(redactor.scrub(exc)) from None
        return
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError:
        raise ServerError(
            f"--verify needs PostgreSQL: install the verify extra ({extra.HINT})"
            " or give --pg-url postgresql://..."
        ) from None
    except Exception as exc:  # platformdirs refuses a TMPDIR others may write to, for one
        raise ServerError(f"the embedded PostgreSQL (pgserver) cannot start: {exc}") from None
    tmp = tempfile.mkdtemp(prefix="secbench-verify-")

    def remove_now() -> None:
        _stop_folder(tmp)
        _remove_folder(tmp)

    try:
        with (stop or Stop()).abandoning(remove_now):
            server: Any = None
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    server = getattr(pgserver, "get_server")(tmp, cleanup_mode="delete")  # noqa: B009
            except Exception as exc:
                raise ServerError(
                    f"the embedded PostgreSQL (pgserver) did not start: {exc}"
                ) from exc
            try:
                uri = _lock_down(str(server.get_uri()))
                yield uri, f"{_version(uri)} (pgserver)"
            finally:
                with contextlib.suppress(OSError):  # its own removal raced the server's exit
                    server.cleanup()
    finally:
        # interrupted while starting, or a server still writing its files as it exits (a
        # stop right after the start): stop and wait for it before removing its folder
        remove_now()


# pg_hba.conf of the embedded server: a password (SCRAM) for every role, on every socket;
# no replication. pgserver's initdb trusts every local connection, so any process of the
# machine's users that finds the socket (a Python case's, for one) logged in as the superuser.
HBA = """\
local all all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
"""


# The embedded server's files are removed when it stops, and nothing in them must survive a
# crash: it need not wait for the disk. Without these, creating and dropping an app's database
# took about 1 s on a busy machine here, and 0.18 s with them (verify makes one per app, one
# more after a case that ended its transaction).
THROWAWAY = ("fsync", "synchronous_commit", "full_page_writes")


def _lock_down(uri: str, wait: float = 10.0) -> str:
    """The embedded server made to ask every role for its password (the superuser's a new
    secret, kept in this process only), its own databases closed to every role but the
    superuser (a run's roles reach their app databases only), and its writes not waiting for
    the disk (THROWAWAY); the superuser's connection string with the password."""
    import secrets
    import time

    from psycopg import sql

    password = secrets.token_urlsafe(32)
    try:
        with psycopg.connect(uri, autocommit=True, connect_timeout=10) as admin:
            admin.execute(
                sql.SQL("ALTER ROLE CURRENT_USER PASSWORD {}").format(sql.Literal(password))
            )
            admin.execute("REVOKE CONNECT, TEMPORARY ON DATABASE postgres, template1 FROM PUBLIC")
            row = admin.execute("SHOW hba_file").fetchone()
            with open(str(row[0]) if row else "", "w", encoding="utf-8") as hba:
                hba.write(HBA)
            for setting in THROWAWAY:
                admin.execute(f"ALTER SYSTEM SET {setting} = off")
            admin.execute("SELECT pg_catalog.pg_reload_conf()")
    except (OSError, psycopg.Error) as exc:
        raise ServerError(
            f"the embedded PostgreSQL cannot be made to ask for passwords: {exc}"
        ) from exc
    limit = time.monotonic() + wait  # the reload is a signal: wait until it has been read
    while True:
        try:
            psycopg.connect(uri, connect_timeout=10).close()
        except psycopg.OperationalError:
            return make_conninfo(uri, password=password)
        if time.monotonic() > limit:
            raise ServerError("the embedded PostgreSQL still lets a login in without a password")
        time.sleep(0.05)


def _remove_folder(folder: str, attempts: int = 10) -> None:
    """Remove `folder`; a PostgreSQL that is still exiting (or pgserver's own cleanup, in
    another thread) may write into it or remove parts of it meanwhile, so try again a few
    times before leaving it (never raise: a stop must end cleanly)."""
    import shutil
    import time

    for _ in range(attempts):
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.exists(folder):
            return
        time.sleep(0.2)


def _stop_folder(folder: str, wait: float = 10.0) -> None:
    """Stop a PostgreSQL that pgserver may have left running in `folder`, at once (SIGQUIT:
    PostgreSQL's immediate shutdown), and wait for it to exit (best effort). A signal, not
    pg_ctl: pg_ctl refuses to run as root, and as root pgserver runs PostgreSQL as another
    user."""
    import signal
    import time

    try:
        with open(os.path.join(folder, "postmaster.pid"), encoding="utf-8") as pid_file:
            pid = int(pid_file.readline().strip())
        os.kill(pid, signal.SIGQUIT)
    except (OSError, ValueError):
        return  # no server there (or not one we may signal)
    limit = time.monotonic() + wait
    while time.monotonic() < limit:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.05)


def _version(uri: str) -> str:
    try:
        with psycopg.connect(uri, connect_timeout=10) as conn:
            row = conn.execute("SHOW server_version").fetchone()
    except psycopg.Error as exc:
        raise ServerError(f"cannot connect to PostgreSQL: {exc}") from exc
    return f"PostgreSQL {row[0] if row else '?'}"
