"""The engine and everything it needs, free of Textual and Rich."""
