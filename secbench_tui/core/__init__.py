"""The engine and everything it needs, free of Textual and Rich.

httpx imports its own command-line tool, and with it Rich, whenever click and rich happen to be
installed. Nothing here uses that tool, and the headless path should not pay Rich's import
time, so the core opts out before any module imports httpx.
"""

import sys

sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
