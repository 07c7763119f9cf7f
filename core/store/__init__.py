"""Persistence: every session's record and history in one SQLite file.

- `writer`: the session record, the writes a turn makes (in SQLite transactions, queued
  off the event loop), and when a live session writes what. The only module of the
  store a prompt runs.
- `schema`: the file's tables, their migrations, and how stored rows read back.
- `sessions`: `SessionStore`, opening the file, and everything besides a turn's writes
  (list, load, fork, delete, compression's archives, transcripts).
- `search`: full-text search over every stored message.
"""
