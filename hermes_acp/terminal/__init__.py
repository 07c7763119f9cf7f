"""`hermes-acp run` and `hermes-acp chat`: the agent from a terminal, a script or CI.

Both are ACP clients of the very server editors use (`connect`), so a terminal sees
what an editor sees: the same sessions, tools, approvals and store.
"""
