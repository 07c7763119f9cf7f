"""An eleventh attack round (issue 19's hidden red team): credentials CI systems hand a job
whole, under names that carry no word saying so, end to end through the real server with a
scripted model in auto: a sandboxed `env` sends whatever it sees. GitLab's
`DOCKER_AUTH_CONFIG` (the registries' logins, base64 `user:password`), a kubeconfig kept as a
secret variable (`KUBE_CONFIG`, `KUBECONFIG_DATA`: the cluster's client key or token), a
service account's JSON key (`FIREBASE_SERVICE_ACCOUNT`, `GCP_SERVICE_ACCOUNT_JSON`).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.fake_provider import FakeProvider
from tests.support.red_team import sandboxed_env_leaks

HIDDEN = {
    "DOCKER_AUTH_CONFIG": '{"auths": {"registry.gitlab.com": {"auth": "ZG9ja2VyLWF1dGgtMDEyMw=="}}}',
    "KUBE_CONFIG": "YXBpVmVyc2lvbjogdjEKdXNlcnM6IGt1YmUtdG9rZW4tMDEyMw==",
    "KUBECONFIG_DATA": "a3ViZWNvbmZpZy1kYXRhLTAxMjM=",
    "FIREBASE_SERVICE_ACCOUNT": '{"type": "service_account", "private_key": "firebase-key-0123"}',
    "GCP_SERVICE_ACCOUNT_JSON": '{"private_key": "gcp-sa-key-0123"}',
}
# Names that only name or point somewhere.
KEPT = {"KUBECONFIG_PATH_HINT": "plain-kept", "SERVICE_ACCOUNT_NAME": "deployer", "KUBE_CONFIG_PATH": "/k"}


async def test_credentials_ci_hands_over_whole_are_not_in_a_sandboxed_environment(
    fake: FakeProvider, home: Path, project: Path
) -> None:
    await sandboxed_env_leaks(fake, home, project, HIDDEN, KEPT)
