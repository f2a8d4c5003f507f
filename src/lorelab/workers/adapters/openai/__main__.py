"""Entry point: ``python -m lorelab.workers.adapters.openai`` answers one role payload."""

from __future__ import annotations

import os

from lorelab.workers._secrets import redact_value
from lorelab.workers.adapters._agent import AdapterFailure, Answer, Request, run_adapter
from lorelab.workers.adapters.openai import __doc__ as PACKAGE_DOC
from lorelab.workers.adapters.openai._host import answer_host
from lorelab.workers.adapters.openai._worker import (
    ANSWER_ROLES,
    answer_role,
    api_key,
    build_parser,
    open_session,
    redact,
)


def handle(request: Request) -> Answer:
    """Answer one role; no message that leaves the adapter carries the key."""
    key: str | None = None
    try:
        key = api_key(request.options, os.environ)
        session = open_session(request, key)
        if request.role == "host":
            answer = answer_host(request, session)
        elif request.role in ANSWER_ROLES:
            answer = answer_role(request, session)
        else:
            raise AdapterFailure(
                "unsupported-role", f"the openai adapter does not play {request.role!r}"
            )
    except AdapterFailure as failure:
        # Any field of the provider's answer may echo the key: nothing recorded keeps it.
        failure.message = redact(failure.message, key)
        failure.model = redact(failure.model, key) if failure.model is not None else None
        raise
    notes = [redact(note, key) for note in answer.notes]
    model = redact(answer.model, key) if answer.model is not None else None
    return Answer(redact_value(answer.response, key), answer.usage, model, notes)


def main() -> None:
    """Parse the options, read the payload, answer once."""
    run_adapter(build_parser(PACKAGE_DOC or ""), handle)


if __name__ == "__main__":
    main()
