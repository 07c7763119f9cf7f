"""Where the agent may read and write: the session's roots, opening beneath them, the files
git or the editor run outside the sandbox, what an "always" is bound to, ignore rules."""
