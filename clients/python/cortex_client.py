"""Cortex API client for Python, standard library only (urllib, json).

    from cortex_client import Client
    cortex = Client("http://127.0.0.1:8080", api_key, brain_id=brain)
    job = cortex.invoke("helper", "hello")
    for entry in cortex.stream(job["job_id"]):
        print(entry.id, entry.data)
    print(cortex.wait(job["job_id"], timeout=60)["result"])

Job streams follow the API's stream rules: entries are `id:` + JSON `data:`, a dropped connection is
resumed from the last entry id (`after` and `Last-Event-ID`), a job stream ends after its terminal
entry (`complete` or `error`), and a finished job resumed after its end answers 204 No Content.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence

__all__ = ["Client", "CortexError", "StreamEntry", "JobReply", "TERMINAL_TYPES"]
__version__ = "0.1.0"

TERMINAL_TYPES = ("complete", "error")

# Failures of a connection (not of the request): the stream reconnects after them.
_DROPPED = (
    urllib.error.URLError,
    http.client.HTTPException,
    ConnectionError,
    socket.timeout,
    TimeoutError,
    OSError,
)


class CortexError(Exception):
    """A refused request: the HTTP status and the API's `{message, code}`."""

    def __init__(self, status: int, code: str, message: str, body: Any = None, headers: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body
        self.headers = headers


@dataclass(frozen=True)
class StreamEntry:
    """One stream entry: its cursor (None only for a `stream_reset`, which has no id) and its JSON payload."""

    id: Optional[str]
    data: Dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.data.get("type"))

    @property
    def terminal(self) -> bool:
        return self.type in TERMINAL_TYPES


class JobReply:
    """The reply a job stream shows, by the reset rule: tokens kept per turn, a `reset` drops that
    turn's tokens so far (a retried turn is a different text), the reply is the turns in order."""

    def __init__(self) -> None:
        self._turns: Dict[int, Dict[str, Any]] = {}

    def apply(self, data: Dict[str, Any]) -> bool:
        """Applies one entry's payload; returns True when the shown text changed."""
        kind = data.get("type")
        if kind == "stream_reset":
            self._turns.clear()
            return True
        if kind == "reset":
            self._turns[int(data["turn"])] = {"attempt": int(data["attempt"]), "parts": []}
            return True
        if kind == "token":
            turn = self._turns.setdefault(int(data["turn"]), {"attempt": int(data["attempt"]), "parts": []})
            if int(data["attempt"]) < turn["attempt"]:
                return False
            turn["parts"].append(str(data["text"]))
            return True
        return False

    @property
    def text(self) -> str:
        return "".join("".join(self._turns[t]["parts"]) for t in sorted(self._turns))


def _error_from(status: int, raw: bytes, headers: Any = None) -> CortexError:
    text = raw.decode("utf-8", "replace")
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        code = body.get("code") if isinstance(body.get("code"), str) else "UNKNOWN"
        return CortexError(status, code, body["message"], body, headers)
    return CortexError(status, "UNKNOWN", text[:200] or f"HTTP {status}", body, headers)


def _retry_after(headers: Any, default: float) -> float:
    try:
        value = float(headers.get("retry-after") or 0)
    except (TypeError, ValueError):
        value = 0
    return value if value > 0 else default


class Client:
    """A client bound to one API, one credential and, with `brain_id`, one brain (sent as X-Brain-Id)."""

    def __init__(self, base_url: str, api_key: str, brain_id: Optional[str] = None, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.brain_id = brain_id
        self.timeout = timeout

    # -- transport ---------------------------------------------------------------------------------

    def _headers(self, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        h = {"Authorization": f"Bearer {self.api_key}", "User-Agent": f"cortex-python/{__version__}"}
        if self.brain_id:
            h["X-Brain-Id"] = self.brain_id
        h.update(extra or {})
        return h

    def _url(self, path: str, query: Optional[Dict[str, Any]] = None) -> str:
        url = self.base_url + path
        if query:
            q = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        return url

    def _open(self, req: urllib.request.Request, timeout: float) -> http.client.HTTPResponse:
        """Sends one request (the single place that touches the network; tests may wrap it)."""
        return urllib.request.urlopen(req, timeout=timeout)  # noqa: S310 (the caller names the API's URL)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: Optional[Dict[str, Any]] = None,
        headers: Optional[Dict[str, str]] = None,
    ) -> Any:
        """Any API call: JSON in, JSON out (None for an empty answer); a refusal raises CortexError."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        extra = {"Accept": "application/json", **(headers or {})}
        if data is not None:
            extra["Content-Type"] = "application/json"
        req = urllib.request.Request(self._url(path, query), data=data, method=method, headers=self._headers(extra))
        try:
            with self._open(req, self.timeout) as res:
                raw = res.read()
        except urllib.error.HTTPError as e:
            raise _error_from(e.code, e.read(), e.headers) from None
        return json.loads(raw) if raw else None

    # -- runs --------------------------------------------------------------------------------------

    def invoke(
        self, neuron: str, message: Optional[str], data: Optional[Dict[str, Any]] = None, **options: Any
    ) -> Dict[str, Any]:
        """Starts a neuron run (by id, or by name with the client's brain); returns `{job_id, status,
        trace_id, …}`. `options` are further body fields: trace_id, stream, neuron_task_options, client_nonce,
        version (a recorded version of the neuron to run), multitask_strategy ("enqueue", the default, "reject", "interrupt" or "rollback": what happens when
        the trace's previous run has not ended; "reject" raises the 409 TRACE_BUSY)."""
        body: Dict[str, Any] = {k: v for k, v in options.items() if v is not None}
        if message is not None:
            body["message"] = message
        if data is not None:
            body["data"] = data
        return self.request("POST", f"/v1/neurons/{urllib.parse.quote(neuron, safe='')}/invoke", body)

    def execute_pathway(self, pathway: str, input: Optional[Dict[str, Any]] = None, **options: Any) -> Dict[str, Any]:
        """Runs a pathway (by id, or by its slug in the client's brain) with `input`;
        returns `{job_id, status, trace_id}`. `options` are further body fields: trace_id, pathway_version."""
        body: Dict[str, Any] = {k: v for k, v in options.items() if v is not None}
        if input is not None:
            body["input"] = input
        return self.request("POST", f"/v1/pathways/{urllib.parse.quote(pathway, safe='')}/execute", body)

    def replay_job(self, job_id: str, from_node: str, input: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Replays an ended pathway run from `from_node`: the nodes visited before it keep their recorded
        values (they do not run again); `input`, when given, flows into `from_node`. Returns `{job_id,
        status, trace_id}` of the new run, whose job carries `replay_of` and `from_node`."""
        body: Dict[str, Any] = {"from_node": from_node}
        if input is not None:
            body["input"] = input
        return self.request("POST", f"/v1/jobs/{urllib.parse.quote(job_id, safe='')}/replay", body)

    def fork_trace(self, trace_id: str, at_engram_id: str) -> Dict[str, Any]:
        """Forks a conversation: a new trace holding copies of the engrams up to and including
        `at_engram_id` (the original untouched); returns `{trace}` with `forked_from`. Invoke a
        neuron with `trace_id` set to the new trace to continue from there."""
        return self.request(
            "POST", f"/v1/traces/{urllib.parse.quote(trace_id, safe='')}/fork", {"at_engram_id": at_engram_id}
        )

    # -- evaluations (docs/evaluations.md) ----------------------------------------------------------

    def create_dataset(
        self, name: str, items: Optional[List[Dict[str, Any]]] = None, description: Optional[str] = None
    ) -> Dict[str, Any]:
        """Creates a dataset in the client's brain; `items` are `{input, expected?, metadata?}`.
        Every change to its items makes a new version (experiments name the version they ran on)."""
        body: Dict[str, Any] = {"name": name}
        if items is not None:
            body["items"] = items
        if description is not None:
            body["description"] = description
        return self.request("POST", "/v1/datasets", body)

    def add_dataset_items(self, dataset_id: str, items: List[Dict[str, Any]]) -> Dict[str, Any]:
        """Adds items (one new dataset version); returns the added items and the version."""
        return self.request("POST", f"/v1/datasets/{urllib.parse.quote(dataset_id, safe='')}/items", {"items": items})

    def import_dataset_items(self, dataset_id: str, content: str, format: str = "jsonl") -> Dict[str, Any]:
        """Imports JSONL (one item per line) or CSV (an `input` column, optional `expected`, others
        become metadata) as one new version."""
        return self.request(
            "POST",
            f"/v1/datasets/{urllib.parse.quote(dataset_id, safe='')}/import",
            {"format": format, "content": content},
        )

    def add_job_to_dataset(self, dataset_id: str, job_id: str, **options: Any) -> Dict[str, Any]:
        """Adds an ended run as an item: its input, and its output as `expected` unless given."""
        body: Dict[str, Any] = {"job_id": job_id}
        body.update({k: v for k, v in options.items() if v is not None})
        return self.request("POST", f"/v1/datasets/{urllib.parse.quote(dataset_id, safe='')}/items/from-job", body)

    def create_experiment(
        self,
        dataset_id: str,
        target: Dict[str, Any],
        evaluators: List[Dict[str, Any]],
        concurrency: Optional[int] = None,
        **options: Any,
    ) -> Dict[str, Any]:
        """Runs every item of a dataset against `target` (`{neuron_id, version}` or `{pathway_id,
        version}`) and scores each output with `evaluators` (exact, contains, regex, json_schema,
        numeric_close, judge, pathway); `options`: name, dataset_version. Poll `get_experiment`."""
        body: Dict[str, Any] = {"dataset_id": dataset_id, "target": target, "evaluators": evaluators}
        if concurrency is not None:
            body["concurrency"] = concurrency
        body.update({k: v for k, v in options.items() if v is not None})
        return self.request("POST", "/v1/experiments", body)

    def get_experiment(self, experiment_id: str) -> Dict[str, Any]:
        """An experiment: progress while it runs, aggregates (mean score per evaluator, pass rate,
        latency percentiles, cost) once it ended."""
        return self.request("GET", f"/v1/experiments/{urllib.parse.quote(experiment_id, safe='')}")

    def compare_experiments(self, experiment_ids: List[str]) -> Dict[str, Any]:
        """Lines two to five experiments up item by item, with what changed."""
        return self.request("GET", "/v1/experiments/compare", query={"ids": ",".join(experiment_ids)})

    def cancel_experiment(self, experiment_id: str) -> Dict[str, Any]:
        """Cancels a running experiment: no new item starts."""
        return self.request("POST", f"/v1/experiments/{urllib.parse.quote(experiment_id, safe='')}/cancel", {})

    def delete_experiment(self, experiment_id: str) -> Dict[str, Any]:
        """Deletes an ended experiment and its per-item results (409 while it runs: cancel it first)."""
        return self.request("DELETE", f"/v1/experiments/{urllib.parse.quote(experiment_id, safe='')}")

    def respond_intervention(
        self,
        intervention_id: str,
        action: str,
        comment: Optional[str] = None,
        fields: Optional[Dict[str, Any]] = None,
        arguments: Optional[Dict[str, Any]] = None,
    ) -> Dict[str, Any]:
        """Answers a human step (approve, reject or one of its options); the waiting run resumes.
        A tool call (kind tool_call) takes approve, reject, or edit with `arguments` to run it with."""
        body: Dict[str, Any] = {"action": action}
        if comment is not None:
            body["comment"] = comment
        if fields is not None:
            body["fields"] = fields
        if arguments is not None:
            body["arguments"] = arguments
        return self.request("POST", f"/v1/interventions/{urllib.parse.quote(intervention_id, safe='')}/respond", body)

    def search(
        self, query: str, mode: str = "hybrid", limit: int = 10, offset: int = 0, **options: Any
    ) -> Dict[str, Any]:
        """Searches one type: `query` is `type/pattern` (e.g. `neurons/invoices`) or a bare term (neurons).
        `mode` is hybrid, lexical or vector; `options` are further body fields (filters, keywords,
        path_prefix, threshold, explain, …). Returns `{type, results, normalized, total, search_mode}`."""
        body = {"query": query, "search_mode": mode, "limit": limit, "offset": offset}
        body.update({k: v for k, v in options.items() if v is not None})
        return self.request("POST", "/v1/search", body)

    # -- jobs --------------------------------------------------------------------------------------

    def job(self, job_id: str) -> Dict[str, Any]:
        """The job's status, progress and result (`GET /v1/jobs/{id}/status`)."""
        return self.request("GET", f"/v1/jobs/{urllib.parse.quote(job_id, safe='')}/status")

    def wait(
        self,
        job_id: str,
        timeout: float,
        interval: float = 0.5,
        until: Sequence[str] = ("completed", "failed"),
    ) -> Dict[str, Any]:
        """Polls the job until its status is one of `until` and returns it; a 429 waits for its
        Retry-After; TimeoutError after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                job = self.job(job_id)
            except CortexError as e:
                if e.status != 429:
                    raise
                time.sleep(min(_retry_after(e.headers or {}, 1.0), max(0.0, deadline - time.monotonic())))
                job = None
            if job is not None and job.get("status") in until:
                return job
            left = deadline - time.monotonic()
            if left <= 0:
                state = job.get("status") if job else "unknown"
                raise TimeoutError(f"job {job_id} still {state} after {timeout} s")
            time.sleep(min(interval, left))

    def stream(
        self,
        job_id: str,
        after: Optional[str] = None,
        max_retries: int = 5,
        retry_delay: float = 0.25,
        read_timeout: float = 60.0,
    ) -> Iterator[StreamEntry]:
        """The job's stream entries after `after`, each once and in order. A dropped connection is
        resumed from the last entry's id; the iteration ends after the terminal entry (`complete` or
        `error`), or at once when the job has ended and nothing follows the cursor (204). A
        `stream_reset` entry (no id) means: drop what was shown, the whole stream follows."""
        path = f"/v1/jobs/{urllib.parse.quote(job_id, safe='')}/stream"
        return self._follow(path, after, True, max_retries, retry_delay, read_timeout)

    def trace_events(self, trace_id: str, after: Optional[str] = None, **kw: Any) -> Iterator[StreamEntry]:
        """A trace's events (engram.created, run.*, trace.updated); never ends by itself."""
        return self._follow(f"/v1/traces/{urllib.parse.quote(trace_id, safe='')}/events", after, False, **kw)

    def follow(self, job_id: str, after: Optional[str] = None, on_text: Any = None) -> Dict[str, Any]:
        """Follows a job to its end; returns `{text, terminal, last_id}` with the reply as the reset rule
        shows it. `terminal` is None when the job had already ended before `after` (204)."""
        reply = JobReply()
        last = after
        for entry in self.stream(job_id, after=after):
            if entry.id or entry.type == "stream_reset":
                last = entry.id
            if reply.apply(entry.data) and on_text:
                on_text(reply.text)
            if entry.terminal:
                return {"text": reply.text, "terminal": entry, "last_id": last}
        return {"text": reply.text, "terminal": None, "last_id": last}

    def _follow(
        self,
        path: str,
        after: Optional[str],
        end_on_terminal: bool,
        max_retries: int = 5,
        retry_delay: float = 0.25,
        read_timeout: float = 60.0,
    ) -> Iterator[StreamEntry]:
        last = after
        failures = 0
        while True:
            wait = min(5.0, retry_delay * (2**failures))
            progressed = False
            extra = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
            if last:
                extra["Last-Event-ID"] = last
            req = urllib.request.Request(self._url(path, {"after": last}), headers=self._headers(extra))
            res = None
            try:
                res = self._open(req, read_timeout)
                if res.status == 204:
                    return
                for entry in _parse_sse(res):
                    if entry.id or entry.type == "stream_reset":
                        last = entry.id  # a stream_reset (no id): the whole stream follows, from its start
                    progressed = True
                    yield entry
                    if end_on_terminal and entry.terminal:
                        return
            except urllib.error.HTTPError as e:
                err = _error_from(e.code, e.read(), e.headers)
                if e.code < 500 and e.code != 429:
                    raise err from None
                wait = _retry_after(e.headers, wait)
            except _DROPPED:
                pass  # a cut connection or a network error: reconnect from the last entry below
            finally:
                if res is not None:
                    res.close()
            failures = 0 if progressed else failures + 1
            if failures > max_retries:
                raise ConnectionError(f"stream {path}: no progress after {max_retries} reconnects")
            if failures:
                time.sleep(wait)


def _parse_sse(res: Any) -> Iterator[StreamEntry]:
    """Server-sent events from a response, by the event-stream format: `field: value` lines, comments
    (`:`) ignored, an event dispatched at a blank line. Only events with JSON data are yielded."""
    event_id: Optional[str] = None
    data: List[str] = []
    while True:
        raw = res.readline()
        if not raw:
            return  # the server closed the connection (or it was cut): the caller decides
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                payload = json.loads("\n".join(data))
                yield StreamEntry(event_id, payload if isinstance(payload, dict) else {"type": None, "value": payload})
            event_id, data = None, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "id" and "\0" not in value:
            event_id = value
