"""Exercises the Python client against a running Cortex API; exits non-zero on the first failure.

    python3 clients/python/tests/run_against.py <base_url> <api_key> <brain_id> <neuron_name> <pathway_id>

The neuron must reply through a model that streams a few tokens; the pathway must wait at a human
step whose `approve` leads to an output. Covered: invoke, stream (a connection cut mid-stream and
resumed from the last id; a resume after the terminal entry, which the API answers 204; a resume
from the middle), wait, execute_pathway, respond_intervention, search and typed errors.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from cortex_client import Client, CortexError, JobReply  # noqa: E402


def check(cond: object, what: str) -> None:
    if not cond:
        raise AssertionError(what)


class CuttingClient(Client):
    """Records every stream request and cuts the first stream connection after `cut_after` entries,
    as a proxy or a network that drops it would (the reader sees the connection reset)."""

    def __init__(self, *args, cut_after: int = 2, **kw) -> None:
        super().__init__(*args, **kw)
        self.cut_after = cut_after
        self.cut = False
        self.requests = []

    def _open(self, req, timeout):
        res = super()._open(req, timeout)
        if "/stream" not in req.full_url:
            return res
        sent = req.get_header("Last-event-id")
        self.requests.append({"url": req.full_url, "last_event_id": sent, "status": res.status})
        if self.cut:
            return res
        self.cut = True
        return _Cut(res, self.cut_after)


class _Cut:
    """A response that fails like a dropped connection once `after` entries have been read from it."""

    def __init__(self, res, after: int) -> None:
        self.res, self.after, self.seen, self.pending_id = res, after, 0, False
        self.status = res.status

    def readline(self):
        if self.seen >= self.after:
            raise ConnectionResetError("connection cut by the test")
        line = self.res.readline()
        if line.startswith(b"id:"):
            self.pending_id = True
        elif line in (b"\n", b"\r\n") and self.pending_id:
            self.seen, self.pending_id = self.seen + 1, False
        return line

    def close(self):
        self.res.close()


def main(base_url: str, api_key: str, brain_id: str, neuron: str, pathway_id: str) -> None:
    cortex = Client(base_url, api_key, brain_id=brain_id)

    # invoke + stream through a cut + wait
    cutter = CuttingClient(base_url, api_key, brain_id=brain_id, cut_after=2)
    job = cutter.invoke(neuron, "hello from python")
    job_id = job["job_id"]
    check(job["status"] in ("pending", "running"), f"invoke: status {job['status']}")
    entries = list(cutter.stream(job_id, retry_delay=0.05))
    check(len(cutter.requests) >= 2, f"stream: one connection only ({cutter.requests})")
    check(cutter.requests[1]["last_event_id"] == entries[1].id, f"stream: resumed from {cutter.requests[1]}")
    check(f"after={entries[1].id}" in cutter.requests[1]["url"], "stream: after= on the resumed request")
    ids = [e.id for e in entries]
    check(len(set(ids)) == len(ids) and all(ids), f"stream: ids repeated or missing: {ids}")
    check(entries[-1].type == "complete", f"stream: last entry {entries[-1].data}")
    check(sum(1 for e in entries if e.terminal) == 1, "stream: one terminal entry")
    print(f"ok stream: {len(entries)} entries over {len(cutter.requests)} connections")

    done = cortex.wait(job_id, timeout=30)
    check(done["status"] == "completed", f"wait: {done}")
    reply = JobReply()
    for e in entries:
        reply.apply(e.data)
    check(reply.text and reply.text == done["result"]["text"], f"reply {reply.text!r} vs result {done['result']}")
    print(f"ok wait: {done['status']}, reply {reply.text!r}")

    # resumed after the terminal entry: 204, no entry, one request, at once
    ended = CuttingClient(base_url, api_key, brain_id=brain_id)
    ended.cut = True
    started = time.monotonic()
    rest = list(ended.stream(job_id, after=entries[-1].id))
    took = time.monotonic() - started
    check(rest == [] and [r["status"] for r in ended.requests] == [204], f"ended: {rest} {ended.requests}")
    check(took < 2, f"ended: took {took:.1f} s")
    middle = list(cortex.stream(job_id, after=entries[1].id))
    check([e.id for e in middle] == ids[2:], "resume from the middle: the rest, once")
    followed = cortex.follow(job_id)
    check(followed["text"] == reply.text and followed["terminal"].type == "complete", f"follow: {followed}")
    again = cortex.follow(job_id, after=followed["last_id"])
    check(again["terminal"] is None, f"follow after the end: {again}")
    print(f"ok ended stream: 204 in {took * 1000:.0f} ms")

    # a cursor newer than the stream (it went backwards): stream_reset, then the whole stream again
    future = "9999999999999-0"
    rebuilt = list(cortex.stream(job_id, after=future))
    check(rebuilt[0].type == "stream_reset" and rebuilt[0].id is None, f"stream_reset: {rebuilt[0]}")
    check([e.id for e in rebuilt[1:]] == ids, "stream_reset: the whole stream follows")
    check(cortex.follow(job_id, after=future)["text"] == reply.text, "stream_reset: the reply is rebuilt")
    print("ok stream_reset: the whole stream again")

    # execute a pathway, answer its human step, wait for the output
    run = cortex.execute_pathway(pathway_id, {"ticket": "ship 1.2"})
    intervention_id = None
    for e in cortex.stream(run["job_id"]):
        if e.type == "waiting" and e.data.get("intervention_id"):
            intervention_id = e.data["intervention_id"]
            break
        check(not e.terminal, f"pathway ended before its human step: {e.data}")
    if intervention_id is None:
        waiting = cortex.wait(run["job_id"], timeout=30, until=("waiting", "completed", "failed"))
        intervention_id = (waiting.get("waitingFor") or {}).get("interventionId")
    check(intervention_id, "pathway: no intervention to answer")
    answered = cortex.respond_intervention(intervention_id, "approve", comment="from python")
    check(answered.get("status") == "approved", f"respond: {answered}")
    finished = cortex.wait(run["job_id"], timeout=30)
    check(finished["status"] == "completed", f"pathway: {finished}")
    check(finished["result"].get("output") == "shipped", f"pathway result: {finished['result']}")
    print(f"ok pathway: intervention {intervention_id} approved, output {finished['result']['output']!r}")

    # search
    hits = []
    for _ in range(20):
        found = cortex.search(f"neurons/{neuron}", mode="lexical", limit=5)
        hits = [h.get("title") for h in found["results"]]
        if neuron in hits:
            break
        time.sleep(0.25)
    check(neuron in hits, f"search: {hits}")
    print(f"ok search: {hits}")

    # evaluations: a dataset (one item, then the run above added to it), an experiment scored by exact
    dataset = cortex.create_dataset(
        f"py-ds-{uuid.uuid4().hex[:6]}", items=[{"input": "hi", "expected": "Hello from the scripted model"}]
    )
    cortex.add_job_to_dataset(dataset["id"], job_id)
    neuron_id = done.get("neuron_id") or neuron
    experiment = cortex.create_experiment(
        dataset["id"], {"neuron_id": neuron_id}, [{"type": "exact"}, {"type": "contains"}], concurrency=2
    )
    for _ in range(240):
        experiment = cortex.get_experiment(experiment["id"])
        if experiment["status"] in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.25)
    check(experiment["status"] == "completed", f"experiment: {experiment}")
    aggregates = experiment["aggregates"]
    check(aggregates["items"] == 2 and aggregates["scored"] == 2, f"experiment: {aggregates}")
    check(aggregates["pass_rate"] == 1, f"experiment: the scripted reply should pass both: {aggregates}")
    print(f"ok evaluations: {aggregates['items']} items scored, pass rate {aggregates['pass_rate']}")

    # typed errors
    def refused(call, status: int, code: str) -> None:
        try:
            call()
        except CortexError as e:
            check(e.status == status and e.code == code and e.message, f"refused as {e.status} {e.code}: {e.message}")
            return
        raise AssertionError(f"not refused (wanted {status} {code})")

    refused(lambda: cortex.invoke("no-such-neuron-" + uuid.uuid4().hex[:8], "x"), 404, "NOT_FOUND")
    refused(lambda: cortex.respond_intervention(str(uuid.uuid4()), "approve"), 404, "NOT_FOUND")
    refused(lambda: cortex.invoke(neuron, None), 400, "VALIDATION_ERROR")
    refused(lambda: list(Client(base_url, "ctx_not-a-key").stream(job_id)), 401, "AUTH_REQUIRED")
    print("ok errors: CortexError with the API's status, code and message")


if __name__ == "__main__":
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        main(*sys.argv[1:])
    except Exception:  # noqa: BLE001 (any failure fails the run, with its traceback)
        traceback.print_exc()
        sys.exit(1)
    print("all ok")
