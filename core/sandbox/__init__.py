"""The command sandbox: `bwrap` (a session's commands confined by bubblewrap: the launch
argv, the environment without credentials, what a refusal means), `probe` (whether bwrap can
start here, asked once) and `unconfined` (commands run outside it still die with the agent).
"""
