"""``python -m lorelab`` runs the CLI, through the same entry point as the ``lorelab`` program."""

from lorelab.cli._entry import main

main()
