"""The command-line interface; ``lorelab.cli.main`` assembles it."""
