"""The MCP gateway: `/mcp` serves each app the tools of the MCP servers in the gateway config
(`config.py`), those its policy allows (`policies/tools.py`), each call read by the app's privacy
rules where it leaves the premises (`privacy.py`) and kept on the books (`calls.py`): the servers
are reached through `upstream.py`, and the endpoint is `endpoint.py`."""
