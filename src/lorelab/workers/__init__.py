"""Workers: external agent processes called through the ``lorelab.worker/1`` protocol."""
