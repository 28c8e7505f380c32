"""The engine's thread: the runs of a matrix on an event loop of their own, in a worker thread.

A drawing of the screen takes tens of milliseconds; on the app's loop it would stand between
a reply and its reading. On its own loop the engine's thread, which uses little processor
time, is scheduled as soon as its socket is ready even when the machine is busy. This class
is the only place that knows there are two loops: it plans the runs as `--no-ui` plans them,
runs `MatrixRun` on its loop (which writes through a store of its own, opened and closed on
that loop; the screens read through the app's, on theirs), turns the events into the
screen's messages (`post_message` is thread-safe), takes a stop, and is cancelled when the
screen goes. Nothing here draws.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.dom import DOMNode
from textual.message import Message
from textual.worker import Worker

from secbench_tui.config import Settings
from secbench_tui.core.run.events import (
    BatchProgress,
    CaseFinished,
    CaseStarted,
    Retrying,
    RunFinished,
    RunStarted,
)
from secbench_tui.lifecycle import MatrixRun
from secbench_tui.planning.plan import catalog_for
from secbench_tui.planning.plan import plan as make_plan
from secbench_tui.tui.errors import describe_error
from secbench_tui.tui.host import Host
from secbench_tui.tui.messages import (
    BatchWaiting,
    CaseBegan,
    ProvingRewrites,
    RetryWaiting,
    RowsArrived,
    RunBegan,
    RunEnded,
    RunFailed,
    RunPlanned,
)

if TYPE_CHECKING:
    from secbench_tui.core.rewrites.progress import Proving
    from secbench_tui.core.run.catalog import Catalog


class Gathered:
    """Cases started and finished, gathered in the engine's thread and posted together every
    `every` seconds (a message per case kept the app drawing most of the time); any other
    event is posted at once, after what was gathered before it."""

    def __init__(self, post: Callable[[Message], object], every: float) -> None:
        self.post = post
        self.every = every
        self._events: list[tuple[int, CaseStarted | CaseFinished]] = []  # not yet posted
        self._pending = False

    def add(self, event: object, slot: int = 0) -> None:
        if isinstance(event, CaseStarted | CaseFinished):
            self._events.append((slot, event))
            if not self._pending:
                self._pending = True
                asyncio.get_running_loop().call_later(self.every, self.flush)
            return
        self.flush()  # what came before goes first
        if isinstance(event, RunStarted):
            self.post(RunBegan(event, slot))
        elif isinstance(event, Retrying):
            self.post(RetryWaiting(event, slot))
        elif isinstance(event, BatchProgress):
            self.post(BatchWaiting(event, slot))
        elif isinstance(event, RunFinished):
            self.post(RunEnded(event, slot))

    def flush(self) -> None:
        """Per run, one message with the cases started, then one with the cases finished (a
        case's start always comes before its end, so the cases in flight add up either way)."""
        self._pending = False
        events, self._events = self._events, []
        began: dict[int, CaseBegan] = {}
        arrived: dict[int, RowsArrived] = {}
        for slot, event in events:
            if isinstance(event, CaseStarted):
                if slot in began:
                    began[slot].events.append(event)
                    began[slot].event = event
                else:
                    began[slot] = CaseBegan(event, slot)
            elif slot in arrived:
                arrived[slot].events.append(event)
            else:
                arrived[slot] = RowsArrived([event], slot)
        for message in (*began.values(), *arrived.values()):
            self.post(message)


class EngineThread:
    """The runs of `settings`, reported to `node` (the run screen) as messages; `catalog`:
    the one the setup screen's estimate priced (None: read once here)."""

    def __init__(
        self, settings: Settings, host: Host, node: DOMNode, catalog: Catalog | None = None
    ) -> None:
        self.settings = settings
        self.host = host
        self.node = node
        self.catalog = catalog
        self.lifecycle: MatrixRun | None = None  # once the runs are planned
        self._stop_asked = False  # stop() came before the lifecycle existed
        self._quitting = False  # the stop came from a quit
        self._loop: asyncio.AbstractEventLoop | None = None  # the runs' own, in the thread
        self.ended = threading.Event()  # the thread's work is over: every case is stored
        self._task: asyncio.Task[Any] | None = None
        self._gathered = Gathered(node.post_message, host.intervals.draw)

    def start(self) -> Worker[None]:
        """From the app's loop: the runs start in the `eval` worker group's thread."""
        return self.node.run_worker(
            self._run,
            name="run_engine",
            group="eval",
            exclusive=True,
            exit_on_error=False,
            thread=True,
        )

    def stop(self, quitting: bool = False) -> None:
        """Let the cases in flight finish, keep every finished one, then end the runs
        (`quitting`: without their summaries, which nobody will see)."""
        self._stop_asked = True
        self._quitting = self._quitting or quitting
        if self.lifecycle is not None and self._loop is not None:
            with contextlib.suppress(RuntimeError):  # its loop has closed: the runs are over
                self._loop.call_soon_threadsafe(self.lifecycle.stop, None, not quitting)

    def cancel(self) -> None:
        """The screen goes (the app quits) while the runs go on: they are cancelled, as an
        async worker's would be (the thread would otherwise keep the process alive). After a
        stop they are not: the cases in flight finish within its grace and are stored while
        the app closes (`SecbenchApp.stop_and_exit`; `run_app` waits for `ended`)."""
        if self._stop_asked:
            return
        loop, task = self._loop, self._task
        if loop is not None and task is not None and not task.done():
            with contextlib.suppress(RuntimeError):  # its loop has closed meanwhile
                loop.call_soon_threadsafe(task.cancel)

    async def _run(self) -> None:
        """In the worker's thread, on its own loop."""
        try:
            await self._runs()
        finally:
            self.ended.set()

    async def _runs(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        post, gathered = self.node.post_message, self._gathered
        app = self.node.app

        def notice(text: str) -> None:  # from opening the store: shown as the app's are
            app.call_from_thread(app.notify, text, title="Database", timeout=20)

        try:
            run = self.lifecycle = await self._planned_run(notice)
            if self._stop_asked:
                run.stop(None, not self._quitting)
            if not run.plan.refused:  # a prompt larger than the model's context
                await run.open_store()
        except Exception as exc:
            post(RunFailed(describe_error(exc)))
            return
        if run.plan.refused:
            await run.aclose()
            post(RunFailed("; ".join(o.message() for o in run.plan.refused)))
            return
        post(RunPlanned(run.runs))
        try:
            async for tagged in run.events():  # closes the store on this loop, however it ends
                gathered.add(tagged.event, tagged.slot)
        finally:
            gathered.flush()

    async def _planned_run(self, notice: Callable[[str], None]) -> MatrixRun:
        """The plan of the settings, made as `--no-ui` makes it, with the setup screen's
        catalog or, started without one, the catalog read once."""
        catalog = self.catalog
        if catalog is None:
            catalog = await catalog_for(
                self.settings,
                directory=self.host.cache_dir,
                offline=self.host.offline_catalog,
            )

        def proving(progress: Proving) -> None:  # from the proving's thread: post is safe
            self.node.post_message(ProvingRewrites(progress.line()))

        plan = await asyncio.to_thread(make_plan, self.settings, catalog, None, proving)
        return MatrixRun(plan, on_notice=notice)
