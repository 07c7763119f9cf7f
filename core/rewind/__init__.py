"""Snapshots of the workspace before and after a turn writes, and restoring them (/rewind)."""
