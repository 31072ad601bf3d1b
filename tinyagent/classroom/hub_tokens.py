"""The classroom model behind a JupyterHub's sign-in: `python -m tinyagent classroom --hub-auth`.

Run as a service the hub manages (deploy/jupyterhub/jupyterhub_config.py), the classroom model answers
only requests whose `Authorization: Bearer <token>` (or `token <token>`) the hub vouches for: a token of a
signed-in user whose scopes include access to this service. A learner's server hands its own token to
its kernels as TINYAGENT_API_KEY, so the lessons send it without a change.

The hub tells its services where its API is and who they are through the environment
(JUPYTERHUB_API_URL, JUPYTERHUB_API_TOKEN, JUPYTERHUB_SERVICE_NAME). A token is asked about with GET
<api>/user, as JupyterHub's own HubAuth asks, and the answer is remembered for `cache_seconds`, so a room
costs the hub one question per learner a minute, not one per model call. The asking is done here, not by
HubAuth.user_for_token (whose scopes check is still used): HubAuth asks on one thread for the whole process and
waits up to 300 s, so one token the hub was slow about held up every learner, cached tokens too, and a stop.
Here each request's thread asks for itself, within HUB_TIMEOUT_S.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import requests

from tinyagent.errors import TinyAgentError

HUB_TIMEOUT_S = 5.0  # to connect, and then for each read: a hub slower than that is a 503, asked again next time
MAX_REMEMBERED = 10_000  # tokens remembered at once; an old answer is forgotten for a new one

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
        self._auth = HubAuth(cache_max_age=cache_seconds)  # the API's URL, TLS files and the scopes check
        self.cache_seconds = cache_seconds
        self._remembered: dict[str, tuple[float, dict | None]] = {}  # sha256 of a token: (until, its user)
        self._lock = threading.Lock()

    def check(self, authorization: str) -> Refusal | None:
        """None if the request's Authorization header carries a token the hub accepts for this service."""
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if not authorization.strip():
            return Refusal(401, "This classroom model is behind the JupyterHub's sign-in: send your hub token as "
                           "'Authorization: Bearer <token>' (a learner's server sets TINYAGENT_API_KEY to one).",
                           "missing_api_key")
        # A token is printable ASCII without spaces: anything else is no token the hub issued (and no header to send)
        if scheme.lower() not in ("bearer", "token") or not token or not (token.isascii() and token.isprintable()) \
                or " " in token:
            return Refusal(401, "Send the hub token as 'Authorization: Bearer <token>'.", "invalid_api_key")
        try:
            user = self.user_for_token(token)
        except HubUnavailable:  # the hub is down, slow, or answered something no hub sends: not the client's fault
            return Refusal(503, "The classroom model cannot reach the JupyterHub to check the token; try again "
                           "in a moment.", "hub_unavailable")
        if user is None:
            return Refusal(401, "The JupyterHub does not know this token (expired, revoked or mistyped): "
                           "sign in again.", "invalid_api_key")
        if not self._auth.check_scopes(self._auth.access_scopes, user):
            return Refusal(403, f"This token may not use the '{self.service}' service: ask the teacher.",
                           "forbidden")
        return None

    def user_for_token(self, token: str) -> dict | None:
        """The hub's user model for `token` (its name and scopes), None for a token the hub does not know (403), from
        the last `cache_seconds` if it was asked then. HubUnavailable when the hub cannot say."""
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        with self._lock:
            until, user = self._remembered.get(key, (0.0, None))
        if until > now:
            return user
        user = self._ask_hub(token)
        with self._lock:
            if len(self._remembered) >= MAX_REMEMBERED:
                self._remembered = {k: v for k, v in self._remembered.items() if v[0] > now}
                if len(self._remembered) >= MAX_REMEMBERED:  # all still fresh: the oldest goes
                    del self._remembered[next(iter(self._remembered))]
            self._remembered[key] = (now + self.cache_seconds, user)
        return user

    def _ask_hub(self, token: str) -> dict | None:
        auth = self._auth
        tls: dict[str, Any] = {}
        if auth.certfile or auth.keyfile:  # the hub's internal TLS, as HubAuth sets it up
            tls = {"cert": (auth.certfile, auth.keyfile), "verify": auth.client_ca or True}
        try:
            answer = requests.get(auth.api_url.rstrip("/") + "/user", headers={"Authorization": f"token {token}"},
                                  timeout=HUB_TIMEOUT_S, allow_redirects=False, **tls)
            if answer.status_code == 403:  # JupyterHub's answer for a token it does not know
                return None
            if answer.status_code != 200:
                raise HubUnavailable(f"the hub answered HTTP {answer.status_code}")
            user = answer.json()
        except (requests.RequestException, ValueError) as exc:
            raise HubUnavailable(str(exc)) from None
        scopes = user.get("scopes") if isinstance(user, dict) else None
        if not (isinstance(scopes, list) and all(isinstance(scope, str) for scope in scopes)
                and isinstance(user.get("name"), str)):
            raise HubUnavailable("the hub's answer is not a user model (a name and a list of scopes)")
        return user


class HubUnavailable(Exception):
    """The hub could not say whose a token is: down, slow, or an answer no hub sends."""
