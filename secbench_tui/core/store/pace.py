"""One rate limit per model, in the database every worker shares (`--worker`).

A model's row of `model_limits` holds the requests per second all its workers together may
send (`rate`; none until `--rate` sets one or the provider's first rate limit shows one) and
the earliest time the next request may go (`next_at`). Each request takes the next free time
(`reserve`: one UPDATE, which the row's lock makes one worker's at a time) and waits until
then, so the requests of every worker are spaced `1 / rate` apart, as one process's would be.

A rate limit (429) halves the rate, once per wave, as `AdaptiveLimit` halves one process's
concurrency: a 429 to a request sent before the last cut says nothing new. With no rate yet,
half the requests sent in the last second is the first. When the provider's wait is over
(its Retry-After, else `COOLDOWN`), the rate goes back to 90% of the one that met the limit,
so a model's workers settle just under the provider's limit instead of meeting it again and
again. Times are the database's clock, which every machine shares.
"""

from __future__ import annotations

from secbench_tui.core.store.queue import NOW, SharedQueue

COOLDOWN = 20.0  # seconds a halved rate stays down when the provider did not say
RESTORE = 0.9  # of the rate that met the limit, once the wait is over
LOWEST = 0.1  # requests per second: never slower than one each ten seconds


class SharedRates(SharedQueue):
    """The `model_limits` table: each model's shared rate."""

    async def set_rate(
        self, model: str, rate: float | None, concurrency: int | None = None
    ) -> None:
        """Make the model's row; a `rate` (`--rate`) or a `concurrency`
        (`--shared-concurrency`) given is the model's from now on."""
        await self._write(
            "INSERT INTO model_limits (model) VALUES (%s) ON CONFLICT (model) DO NOTHING", (model,)
        )
        if rate is not None:
            await self._write(
                "UPDATE model_limits SET rate = %s, restore_rate = NULL, calm_until = 0"
                " WHERE model = %s",
                (rate, model),
            )
        if concurrency is not None:
            await self._write(
                "UPDATE model_limits SET concurrency = %s WHERE model = %s", (concurrency, model)
            )

    async def model_share(self, model: str) -> int | None:
        """This worker's share of the requests in flight the model's workers have together
        (its `concurrency` over the live workers of the model's shared runs, rounded up);
        None when the model has no such cap."""
        cursor = await self._pg.execute_native(
            "SELECT m.concurrency, (SELECT COUNT(*) FROM workers w"
            " JOIN shared_runs s ON s.run_id = w.run_id JOIN runs r ON r.id = w.run_id"
            f" WHERE r.model_name = m.model AND w.ended_at IS NULL"
            f" AND w.seen_at + s.lease_seconds >= {NOW})"
            " FROM model_limits m WHERE m.model = %s",
            (model,),
        )
        row = await cursor.fetchone()
        if row is None or row[0] is None:
            return None
        total, live = int(row[0]), max(1, int(row[1]))
        return max(1, -(-total // live))

    async def reserve(self, model: str) -> tuple[float, float]:
        """The next free time for one request of `model`: (seconds to wait from now, that
        time by the database's clock)."""
        rows = await self._write(
            "UPDATE model_limits m SET"
            " rate = CASE WHEN m.restore_rate IS NOT NULL AND now.t >= m.calm_until"
            " THEN m.restore_rate ELSE m.rate END,"
            " restore_rate = CASE WHEN now.t >= m.calm_until THEN NULL ELSE m.restore_rate END,"
            " window_count = CASE WHEN now.t - m.window_start >= 1 THEN 1"
            " ELSE m.window_count + 1 END,"
            " last_window = CASE WHEN now.t - m.window_start >= 1 THEN m.window_count"
            " ELSE m.last_window END,"
            " window_start = CASE WHEN now.t - m.window_start >= 1 THEN now.t"
            " ELSE m.window_start END,"
            " next_at = CASE WHEN m.rate IS NULL THEN now.t"
            " ELSE GREATEST(m.next_at, now.t) + 1.0 / m.rate END"
            f" FROM (SELECT {NOW} AS t) now WHERE m.model = %s"
            " RETURNING CASE WHEN m.rate IS NULL THEN now.t ELSE m.next_at - 1.0 / m.rate END,"
            " now.t",
            (model,),
        )
        # RETURNING sees the new row: a rate set by this very update spaces the next one
        if not rows:
            return 0.0, 0.0
        slot, now = float(rows[0][0]), float(rows[0][1])
        return max(0.0, slot - now), max(slot, now)

    async def rate_limited(self, model: str, retry_after: float | None, sent_at: float) -> None:
        """The provider refused a request of `model` sent at `sent_at` (the database's
        clock) for its rate: halve the shared rate, unless it was cut since that request."""
        wait = COOLDOWN if retry_after is None else retry_after
        await self._write(
            "UPDATE model_limits m SET"
            " restore_rate = CASE WHEN now.t >= m.calm_until"
            " THEN %(restore)s * COALESCE(m.rate, GREATEST(m.window_count, m.last_window, 1))"
            " ELSE m.restore_rate END,"
            " rate = GREATEST(%(lowest)s,"
            " COALESCE(m.rate, GREATEST(m.window_count, m.last_window, 1)) / 2.0),"
            " lowered_at = now.t, calm_until = GREATEST(m.calm_until, now.t + %(wait)s),"
            " limited = m.limited + 1"
            f" FROM (SELECT {NOW} AS t) now WHERE m.model = %(model)s"
            " AND m.lowered_at <= %(sent)s",
            {"restore": RESTORE, "lowest": LOWEST, "wait": wait, "model": model, "sent": sent_at},
        )

    async def model_rate(self, model: str) -> tuple[float | None, int]:
        """The model's shared rate now (None: none yet), and the rate limits met so far."""
        cursor = await self._pg.execute_native(
            "SELECT rate, limited FROM model_limits WHERE model = %s", (model,)
        )
        row = await cursor.fetchone()
        if row is None:
            return None, 0
        return (None if row[0] is None else float(row[0])), int(row[1])
