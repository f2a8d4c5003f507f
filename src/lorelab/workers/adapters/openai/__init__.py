"""The OpenAI-compatible adapter: any model behind ``/v1/chat/completions`` as a worker.

``python -m lorelab.workers.adapters.openai --model NAME --base-url URL [--api-key-env VAR]
[--model-file PATH] [--schema-dialect json_schema|llama-cpp|none]`` plays architect, author and
reviewer (one schema-constrained completion each) and host (the agentless loop of ``_host``).
vLLM, llama.cpp's server, Ollama, LM Studio and hosted providers serve this API.
"""
