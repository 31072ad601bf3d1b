"""The classroom model behind a JupyterHub's sign-in: `python -m tinyagent classroom --hub-auth`.

Run as a service the hub manages (deploy/jupyterhub/jupyterhub_config.py), the classroom model answers
only requests whose `Authorization: Bearer <token>` (or `token <token>`) the hub vouches for: a token of a
signed-in user whose scopes include access to this service. A learner's server hands its own token to
its kernels as TINYAGENT_API_KEY, so the lessons send it without a change.

The hub tells its services where its API is and who they are through the environment
(JUPYTERHUB_API_URL, JUPYTERHUB_API_TOKEN, JUPYTERHUB_SERVICE_NAME); JupyterHub's own HubAuth asks it
about a token and remembers the answer for `cache_seconds`, so a room costs the hub one question per
learner a minute, not one per model call.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tinyagent.errors import TinyAgentError

HUB_ENVIRONMENT = ("JUPYTERHUB_API_URL", "JUPYTERHUB_API_TOKEN", "JUPYTERHUB_SERVICE_NAME")


@dataclass(frozen=True)
class Refusal:
    """Why a request may not use the model: an HTTP status, a message for the client, an error code."""

    status: int
    message: str
    code: str


class HubTokens:
    """Checks tokens with the JupyterHub that runs this process as a service."""

    def __init__(self, cache_seconds: int = 60):
        missing = [name for name in HUB_ENVIRONMENT if not os.environ.get(name)]
        if missing:
            raise TinyAgentError(
                f"--hub-auth needs the environment a JupyterHub gives its services ({', '.join(missing)} "
                "not set): run it as a service in the hub's config (deploy/jupyterhub/)"
            )
        try:
            from jupyterhub.services.auth import HubAuth
        except ImportError:
            raise TinyAgentError("--hub-auth needs JupyterHub installed (pip install -e '.[hub]')") from None
        self.service = os.environ["JUPYTERHUB_SERVICE_NAME"]
        self._auth = HubAuth(cache_max_age=cache_seconds)

    def check(self, authorization: str) -> Refusal | None:
        """None if the request's Authorization header carries a token the hub accepts for this service."""
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if not authorization.strip():
            return Refusal(401, "This classroom model is behind the JupyterHub's sign-in: send your hub token as "
                           "'Authorization: Bearer <token>' (a learner's server sets TINYAGENT_API_KEY to one).",
                           "missing_api_key")
        if scheme.lower() not in ("bearer", "token") or not token:
            return Refusal(401, "Send the hub token as 'Authorization: Bearer <token>'.", "invalid_api_key")
        try:
            user = self._auth.user_for_token(token, sync=True)
        except Exception:  # noqa: BLE001 - the hub is down or answered garbage: not the client's fault
            return Refusal(503, "The classroom model cannot reach the JupyterHub to check the token; try again "
                           "in a moment.", "hub_unavailable")
        if user is None:
            return Refusal(401, "The JupyterHub does not know this token (expired, revoked or mistyped): "
                           "sign in again.", "invalid_api_key")
        if not self._auth.check_scopes(self._auth.access_scopes, user):
            return Refusal(403, f"This token may not use the '{self.service}' service: ask the teacher.",
                           "forbidden")
        return None
