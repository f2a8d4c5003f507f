"""``python -m lorelab.testing.memcoder``: serve the stand-in over stdio."""

from lorelab.testing.memcoder._server import main

main()
