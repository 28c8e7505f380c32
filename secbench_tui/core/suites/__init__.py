"""Suite loaders: a folder is either a markdown suite or a VulDetectBench test set."""
