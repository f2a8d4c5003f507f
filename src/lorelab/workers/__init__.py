"""Workers: external agent processes called through the ``lorelab.worker/1`` protocol.

The public surface: ``call_worker`` (the bounded transport), ``bind_identity`` and
``check_identity`` (what a worker argv runs, hashed), ``resolve_agent`` (naming a worker), the
role models in :mod:`lorelab.workers.roles` and the role prompt in :mod:`lorelab.workers.prompts`.
The protocol fixtures (test doubles) live in :mod:`lorelab.testing`.
"""

from lorelab.workers._startable import cannot_start, worker_name
from lorelab.workers.agents import (
    SHIPPED_ADAPTERS,
    EndpointOptions,
    adapter_argv,
    is_fixture_agent,
    require_endpoint_use,
    resolve_agent,
    with_endpoint,
)
from lorelab.workers.endpoints import check_endpoints
from lorelab.workers.identity import (
    VERIFICATION_SCOPE,
    IdentityCheck,
    WorkerIdentity,
    bind_identity,
    check_identity,
    implementation_hashes,
)
from lorelab.workers.prompts import build_prompt, prompt_hash, role_prompt
from lorelab.workers.roles import (
    MAX_TIMEOUT_MS,
    PROMPT_VERSION,
    PROTOCOL,
    ROLES,
    Usage,
    validate_payload,
    validate_response,
)
from lorelab.workers.transport import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_MS,
    MAX_OUTPUT_BYTES_CAP,
    RoleCall,
    RoleReceipt,
    WorkerBounds,
    call_worker,
    check_bounds,
)

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_TIMEOUT_MS",
    "MAX_OUTPUT_BYTES_CAP",
    "MAX_TIMEOUT_MS",
    "PROMPT_VERSION",
    "PROTOCOL",
    "ROLES",
    "SHIPPED_ADAPTERS",
    "VERIFICATION_SCOPE",
    "EndpointOptions",
    "IdentityCheck",
    "RoleCall",
    "RoleReceipt",
    "Usage",
    "WorkerBounds",
    "WorkerIdentity",
    "adapter_argv",
    "bind_identity",
    "build_prompt",
    "call_worker",
    "cannot_start",
    "check_bounds",
    "check_endpoints",
    "check_identity",
    "implementation_hashes",
    "is_fixture_agent",
    "prompt_hash",
    "require_endpoint_use",
    "resolve_agent",
    "role_prompt",
    "validate_payload",
    "validate_response",
    "with_endpoint",
    "worker_name",
]
