"""``python -m lorelab`` runs the CLI."""

from lorelab.cli.main import main

main()
