"""`python -m secbench_tui` runs the same entry point as the console script."""

from secbench_tui.cli import main

raise SystemExit(main())
