"""A fifth attack round (issue 19's hidden red team): credentials in the environment that
their variable's name does not give away, end to end through the real server with a
scripted model in auto: a sandboxed `env` with the network on sends whatever it sees.

- A URL with a password in it: `DATABASE_URL=postgres://app:pw@db/x`, `PIP_INDEX_URL`
  with a private index's token, `REDIS_URL`.
- Names the list missed: npm's `npm_config__authToken` and `_auth` (how CI hands npm its
  token), GitLab's `CI_JOB_JWT`, `SENTRY_DSN` (its key), Azure's `…_CONNECTION_STRING`.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_provider import FakeProvider
from tests.support.red_team import sandboxed_env_leaks

HIDDEN = {
    "DATABASE_URL": "postgres://app:db-pass-0123@db.internal:5432/app",
    "PIP_INDEX_URL": "https://build:pypi-token-0123@pypi.corp.example/simple",
    "REDIS_URL": "redis://:redis-pass-0123@cache:6379/0",
    "npm_config__authToken": "npm-authtoken-0123",
    "npm_config__auth": "bnBtLWF1dGgtMDEyMw==",
    "CI_JOB_JWT": "eyJ-ci-job-jwt-0123",
    "SENTRY_DSN": "https://sentry-key-0123@o1.ingest.sentry.io/1",
    "AZURE_STORAGE_CONNECTION_STRING": "AccountName=a;AccountKey=azure-key-0123",
}
KEPT = {
    "PLAIN_SETTING": "plain-kept",
    "HOMEPAGE_URL": "https://example.com/kept",
    "HTTPS_PROXY": "http://proxyuser:proxy-kept@proxy:3128",  # the sandbox's network goes through it
}


async def test_credentials_by_value_and_by_npm_ci_names_are_not_in_a_sandboxed_environment(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    await sandboxed_env_leaks(fake, home, project, HIDDEN, KEPT)
