"""The policy language: schema, loading and validation with line numbers."""
