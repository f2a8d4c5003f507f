"""Binding the endpoint of the openai adapter: base URL, model name, the model file's hash, and
what the server says it serves.

The model file named by ``--model-file`` is hashed whole, whatever its size (a GGUF of many GiB
is read once; later checks reuse the hash while the file's status is unchanged). The server is
asked what it serves (:mod:`._served`, no key, no completion); a ``--model`` it does not list,
or a model file that is not the one it loaded, is refused (:class:`UsageError`: exit 2 at
preflight; mid-run the re-binding fails, which makes the call ``identity-changed``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from lorelab.errors import PreflightError, UsageError
from lorelab.workers._tools import option_value
from lorelab.workers.adapters.openai._http import parse_base_url
from lorelab.workers.identity._files import Binding, is_file, not_a_file
from lorelab.workers.identity._models import EndpointBinding
from lorelab.workers.identity._served import ask_served, check_served

OPENAI_ADAPTER: Final = "lorelab.workers.adapters.openai"
DEFAULT_KEY_VARIABLE: Final = "OPENAI_API_KEY"
DEFAULT_DIALECT: Final = "json_schema"
# Model files are hashed whole: 1 TiB is no practical limit, only a guard against a device file.
MODEL_HASH_CAP: Final = 1 << 40


def bind_endpoint(binding: Binding, program_args: Sequence[str]) -> EndpointBinding | None:
    """The endpoint record of an openai adapter argv (``None`` for any other worker)."""
    if binding.module != OPENAI_ADAPTER:
        return None
    base_url = option_value(program_args, "--base-url")
    model = option_value(program_args, "--model") or option_value(program_args, "-m")
    if not base_url or not model:
        raise UsageError("the openai adapter needs --base-url URL and --model NAME")
    endpoint = parse_base_url(base_url, "--base-url")
    model_file = option_value(program_args, "--model-file")
    sha256: str | None = None
    bound_file: tuple[Path, str] | None = None
    if model_file:
        if os.path.isabs(model_file):
            path, cwd_relative = Path(model_file), False
        else:
            path, cwd_relative = binding.cwd / model_file, True
        if not is_file(path):
            raise PreflightError(not_a_file("--model-file", model_file, path, binding.cwd))
        binding.bind("model", model_file, path, cwd_relative, MODEL_HASH_CAP)
        sha256 = next(f.sha256 for f in binding.files if f.kind == "model")
        bound_file = (path, sha256)
    served = ask_served(endpoint)
    check_served(served, endpoint.base_url, model, bound_file, MODEL_HASH_CAP)
    return EndpointBinding(
        adapter=OPENAI_ADAPTER,
        base_url=endpoint.base_url,
        model=model,
        schema_dialect=option_value(program_args, "--schema-dialect") or DEFAULT_DIALECT,
        api_key_variable=option_value(program_args, "--api-key-env") or DEFAULT_KEY_VARIABLE,
        model_file=model_file,
        model_file_sha256=sha256,
        served=served,
    )
