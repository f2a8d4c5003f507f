"""Workers: external agent processes called through the ``lorelab.worker/1`` protocol.

The public surface: ``call_worker`` (the bounded transport), ``bind_identity`` and
``check_identity`` (what a worker argv runs, hashed), ``resolve_agent`` (naming a worker) and the
role models in :mod:`lorelab.workers.roles`.
"""

from lorelab.workers.agents import (
    SHIPPED_ADAPTERS,
    adapter_argv,
    is_fixture_agent,
    resolve_agent,
)
from lorelab.workers.identity import (
    VERIFICATION_SCOPE,
    BoundFile,
    IdentityCheck,
    InlineSource,
    LauncherRecord,
    ModelRequest,
    ToolBinding,
    WorkerIdentity,
    bind_identity,
    check_identity,
    credential_reason,
    implementation_hashes,
    rebind_identity,
)
from lorelab.workers.roles import (
    MAX_TIMEOUT_MS,
    PROMPT_VERSION,
    PROTOCOL,
    ROLES,
    Usage,
    build_prompt,
    prompt_hash,
    role_prompt,
    validate_payload,
    validate_response,
)
from lorelab.workers.transport import (
    DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_TIMEOUT_MS,
    FAILURE_CLASSES,
    MAX_OUTPUT_BYTES_CAP,
    ModelClaim,
    RoleCall,
    RoleReceipt,
    call_worker,
    check_bounds,
)

__all__ = [
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_TIMEOUT_MS",
    "FAILURE_CLASSES",
    "MAX_OUTPUT_BYTES_CAP",
    "MAX_TIMEOUT_MS",
    "PROMPT_VERSION",
    "PROTOCOL",
    "ROLES",
    "SHIPPED_ADAPTERS",
    "VERIFICATION_SCOPE",
    "BoundFile",
    "IdentityCheck",
    "InlineSource",
    "LauncherRecord",
    "ModelClaim",
    "ModelRequest",
    "RoleCall",
    "RoleReceipt",
    "ToolBinding",
    "Usage",
    "WorkerIdentity",
    "adapter_argv",
    "bind_identity",
    "build_prompt",
    "call_worker",
    "check_bounds",
    "check_identity",
    "credential_reason",
    "implementation_hashes",
    "is_fixture_agent",
    "prompt_hash",
    "rebind_identity",
    "resolve_agent",
    "role_prompt",
    "validate_payload",
    "validate_response",
]
