"""An eighth attack round (issue 19's hidden red team): credentials whose names the list
missed, end to end through the real server with a scripted model in auto: a sandboxed `env`
sends whatever it sees. The word is inside the name (`TF_TOKEN_app_terraform_io`,
`POETRY_PYPI_TOKEN_PYPI`, `SECRET_KEY_BASE`, `SLACK_WEBHOOK_URL`) or run into it (gradle's
`ORG_GRADLE_PROJECT_signingPassword`), or it is a password manager's unlocked session
(`OP_SESSION_<account>`: 1Password's CLI reads any vault item with it; `BW_SESSION`:
Bitwarden's key to the local vault).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_provider import FakeProvider
from tests.support.red_team import sandboxed_env_leaks

HIDDEN = {
    "TF_TOKEN_app_terraform_io": "tf-cloud-token-0123",
    "POETRY_PYPI_TOKEN_PYPI": "pypi-poetry-token-0123",
    "SECRET_KEY_BASE": "rails-secret-key-base-0123",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0/B0/slack-hook-0123",
    "ORG_GRADLE_PROJECT_signingPassword": "gradle-signing-0123",
    "OP_SESSION_my": "onepassword-session-0123",
    "BW_SESSION": "bitwarden-session-0123",
}
KEPT = {"TOKENIZERS_PARALLELISM": "false", "XDG_SESSION_TYPE": "wayland", "PLAIN_SETTING": "plain-kept"}


async def test_credentials_the_name_list_missed_are_not_in_a_sandboxed_environment(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    await sandboxed_env_leaks(fake, home, project, HIDDEN, KEPT)
