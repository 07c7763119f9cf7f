"""Commands: their options and handles, local subprocesses, background jobs."""
