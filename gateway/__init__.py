"""The ASGI app: auth, OpenAI-compatible endpoints, streaming, CLI."""
