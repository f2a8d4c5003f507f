"""Identity binding: which files a worker argv will run, hashed before anything runs.

``bind_identity`` resolves the launcher exactly as the child would (absolute; relative to the
trial cwd; a PATH lookup whose relative entries resolve against the trial cwd), then binds what
the argv names: a launcher script's shebang interpreter, Python ``-c`` source, ``-m`` module and
script, Node ``-e``/``-p`` source, entrypoint and ``--require``/``--import`` preloads, the script
or inline text of shells and other interpreters, and every existing absolute file operand (for
launchers other than Python and Node, every file operand in the trial cwd too).
Credential-like operands are refused without being read. ``check_identity`` binds again and
reports every change in content, resolved target or permission bits; nothing here ever runs the
worker.

The modules: ``_credentials`` (screening), ``_grammar`` (the argv grammars of shells, ruby, perl,
php, lua, Rscript, tclsh, deno, bun), ``_python`` and ``_node`` (their grammars and binding),
``_shell`` (binding a grammar's plan), ``_files`` (resolving and hashing), ``_bind`` (the
binder), ``_compare`` (re-binding and comparison), ``_models`` (the records).
"""

from lorelab.workers.identity._bind import bind_identity, implementation_hashes
from lorelab.workers.identity._compare import check_identity, compare_identities, rebind_identity
from lorelab.workers.identity._credentials import credential_reason
from lorelab.workers.identity._models import (
    SCHEMA_VERSION,
    VERIFICATION_SCOPE,
    BoundFile,
    BoundKind,
    EndpointBinding,
    IdentityCheck,
    InlineSource,
    LauncherRecord,
    ModelRequest,
    ToolBinding,
    WorkerIdentity,
)

__all__ = [
    "SCHEMA_VERSION",
    "VERIFICATION_SCOPE",
    "BoundFile",
    "BoundKind",
    "EndpointBinding",
    "IdentityCheck",
    "InlineSource",
    "LauncherRecord",
    "ModelRequest",
    "ToolBinding",
    "WorkerIdentity",
    "bind_identity",
    "check_identity",
    "compare_identities",
    "credential_reason",
    "implementation_hashes",
    "rebind_identity",
]
