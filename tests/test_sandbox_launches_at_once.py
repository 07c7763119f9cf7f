"""Many launches of one session's sandbox at once, with real bwrap, in a project without
`.git`: each keeps its read-only `.git` and its private cache overlay to its end, and once
all have ended no `.git` is left in the project.

The server counts and uncounts launches on its event loop's thread (see `Sandbox`); this
drives `wrap` and `after_command` from sixteen threads at once, the most a caller could
interleave them. A launch that started beside a running one took that one's empty mount
point for a repository: `.git` was writable to its command (`mkdir .git/x` worked), and
the `config` and hook folders made for it were left in the project.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from hermes_core.sandbox.bwrap import Sandbox
from hermes_core.workspace import WorkspaceScope

THREADS = 16
LAUNCHES_EACH = 4
# Inside: `.git` is there (mounted) and refuses writes; the cache overlay takes a new file
# and a rename (which needs the overlay's own work dir).
CHECK = (
    "test -d .git || echo no-git; mkdir .git/x 2>/dev/null && echo git-writable; "
    "d=~/.cache/pip/d$SRANDOM$SRANDOM; mkdir -p $d && echo x > $d/f && mv $d/f $d/g || echo cache-failed"
)


def test_launches_from_many_threads_keep_their_mounts_and_leave_no_git_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    (home / ".cache" / "pip").mkdir(parents=True)
    sandbox = Sandbox(WorkspaceScope(project), home=home, state=tmp_path / "state", caches=("~/.cache/pip",))
    assert sandbox.confinement == "sandboxed"
    start = threading.Barrier(THREADS)
    wrong: list[str] = []

    def launch() -> None:
        start.wait()
        for _ in range(LAUNCHES_EACH):
            argv = sandbox.wrap(["/bin/bash", "-c", CHECK], cwd=project)
            env = {**sandbox.environment(dict(os.environ)), "HOME": str(home)}
            try:
                done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
            finally:
                sandbox.after_command()
            if done.returncode != 0 or done.stdout:
                wrong.append(f"{done.returncode} {done.stdout} {done.stderr[-500:]}")

    threads = [threading.Thread(target=launch) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert wrong == []
    assert not (project / ".git").exists(), sorted(str(p.relative_to(project)) for p in project.rglob("*"))
