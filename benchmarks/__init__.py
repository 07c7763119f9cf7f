"""The performance suite: each script measures hermes-acp against a baseline in one run."""
