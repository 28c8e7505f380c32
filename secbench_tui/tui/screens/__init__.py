"""The app's screens: setup, run, results, export, help, and a yes/no question."""
