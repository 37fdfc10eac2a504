"""One Action API request with the retry rule, over ``requests`` (no pywikibot: the web
process keeps it out, and reads need no login).

Every request carries ``maxlag`` (the API then answers "maxlag" instead of loading lagged
replicas), ``format=json`` and ``formatversion=2``. Retried, by :class:`RetryPolicy`: timeouts
and connection errors, HTTP 429 and 5xx, and a ``maxlag`` error, each waiting for the server's
``Retry-After`` when it sent one. Everything else, and the last failed try, is a one-line
:class:`WikiError` naming the API and what was being done.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Mapping, NamedTuple, Optional, Union

import requests

from wikivel_bot.errors import WikiError
from wikivel_bot.wikidata.agent import user_agent as default_user_agent
from wikivel_bot.wikidata.retry import RetryPolicy, retry_after_seconds

class Busy(NamedTuple):
    """A failure worth retrying: why, and the server's ``Retry-After`` in seconds if sent."""

    why: str
    retry_after: Optional[float] = None


# MediaWiki's recommendation for bots: back off when the replicas lag by more than 5 s.
DEFAULT_MAXLAG = 5


class ApiSession:
    """GET requests to MediaWiki APIs with one User-Agent and one retry policy.

    :param user_agent: the whole header (default: :func:`~wikivel_bot.wikidata.agent.user_agent`).
    :param policy: attempts, backoff, the cap on every wait, the sleep function.
    :param maxlag: sent with every request.
    :param timeout_s: per request (connect and read).
    :param session: a ``requests.Session`` to use (default: a new one).
    """

    def __init__(self, user_agent: str = "", policy: Optional[RetryPolicy] = None, maxlag: int = DEFAULT_MAXLAG,
                 timeout_s: float = 30.0, session: Optional[requests.Session] = None) -> None:
        self.policy = policy or RetryPolicy()
        self.maxlag = maxlag
        self.timeout_s = timeout_s
        self.http = session or requests.Session()
        self.http.headers["User-Agent"] = user_agent or default_user_agent()
        self._lock = threading.Lock()
        self.sent = 0  # requests sent, retries included (for tests and statistics)

    def get(self, url: str, params: Mapping[str, str], what: str) -> Dict[str, Any]:
        """The decoded JSON answer of ``url`` to ``params``.

        :param what: what is being done, for the error message ("reading Wikidata items").
        :raises WikiError: an API error, a non-JSON answer, or still busy after every attempt.
        """
        query = {**params, "format": "json", "formatversion": "2", "maxlag": str(self.maxlag)}
        attempts = max(1, self.policy.attempts)
        for attempt in range(attempts):
            answer = self._try(url, query, what)
            if not isinstance(answer, Busy):
                return answer
            if attempt + 1 == attempts:
                raise WikiError(f"{url}: {what} failed after {attempts} attempts: {answer.why}")
            self.policy.pause(attempt, answer.retry_after)
        raise AssertionError("unreachable")  # pragma: no cover

    def _try(self, url: str, query: Mapping[str, str], what: str) -> Union[Dict[str, Any], Busy]:
        """The answer, or :class:`Busy` for a failure worth retrying."""
        with self._lock:
            self.sent += 1
        try:
            response = self.http.get(url, params=query, timeout=self.timeout_s)
        except requests.RequestException as exc:
            # The exception's text repeats the URL and pool internals; its class says enough.
            return Busy(type(exc).__name__)
        status = response.status_code
        if status == 429 or status >= 500:
            return Busy(f"HTTP {status}", self._retry_after(response))
        if status != 200:
            raise WikiError(f"{url}: {what} failed: HTTP {status}")
        try:
            data = response.json()
        except ValueError:
            raise WikiError(f"{url}: {what} failed: the answer is not JSON (HTTP {status})") from None
        if not isinstance(data, dict):
            raise WikiError(f"{url}: {what} failed: the answer is not a JSON object")
        error = data.get("error")
        if isinstance(error, dict):
            code, info = error.get("code", "?"), " ".join(str(error.get("info", "")).split())
            if code == "maxlag":
                return Busy(f"maxlag ({info})", self._retry_after(response))
            raise WikiError(f"{url}: {what} failed: API error {code}: {info}")
        return data

    def _retry_after(self, response: requests.Response) -> Optional[float]:
        return retry_after_seconds(response.headers.get("Retry-After"), self.policy.max_wait_s)

    def close(self) -> None:
        self.http.close()
