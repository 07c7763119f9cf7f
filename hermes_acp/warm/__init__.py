"""The warm start: a forking server that has already imported what a session needs.

A spawned `hermes-acp --stdio` (the stub, stub.py) hands its stdio, cwd and environment
to a server of the same installation and environment (place.py: the key and the socket),
which forks a child that serves the editor (child.py) exactly as a cold process would.
Without a server the process runs cold and starts one for next time (launch.py, serve.py).
"""
