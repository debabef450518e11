"""Launch day: a crowd of simulated annotators on real `annotate serve` replicas, measured.

Each simulated annotator does what a browser tab does, over the same wire: it opens its login
link (`GET /?token=...`, keeps the HttpOnly cookie the app sets), opens Streamlit's websocket
(`/_stcore/stream`, subprotocol `streamlit`, same-origin `Origin`, the cookie in the upgrade) and
speaks Streamlit's own protobuf messages from the installed package: a `rerun_script` BackMsg
to load the page, then the labelling component's events as the page's JavaScript sends them
(`annotate/web/static/label_form.js`): the answers typed at a human pace (a think time per pair
drawn from a log-normal with median `--pace` seconds, the keys spread over it), a `draft` at
most every 4 s after a change (DRAFT_MS in the page; a POST to the form's draft address, as
the page's fetch, else the component's event), and `submit` at the end. It keeps the
hashes of the cacheable messages it received and sends them back, as the browser's message
cache does, so the server may answer with references instead of resending what it has.

What it cannot see: anything that happens in the browser (layout, painting, the JavaScript's
own time, the keyboard), and what a browser sends besides (static files, the component's
assets, the health pings). `benchmarks/bench_label_browser.py` measures the browser side.

    python benchmarks/bench_crowd.py --annotators 200 --minutes 10 --replicas 2 \\
        --db postgresql+psycopg://127.0.0.1/crowd [--pace 40] [--pairs-file F] [--url URL ...]

A long day (`--faults`): the crowd reaches the replicas through the documented nginx
(tests/nginx.py, docs/deployment.md) and, on a schedule spread over the run, a replica is killed
(SIGKILL) and started again `--replica-kills` times, PostgreSQL is restarted `--db-restarts`
times (only a cluster of the benchmark's own, `--private-postgres`: initdb and pg_ctl in a
temporary folder, tests/private_postgres.py; the machine's shared server is never restarted),
and a share `--vanish` of the annotators vanish mid-pair without a close (their sockets stay
open and silent, as a phone that lost its network: no close, no beacon, no heartbeat). A tab
whose websocket drops reconnects as the page does (through nginx, to a replica that is up) and
goes on; an answer whose reply never came is answered again. The JSON line then also says
`faults` (what was done), `longest_stall_s` (the longest an annotator who stayed waited for a
page, a Submit's reply, a sign-in or a reconnect, outside the fault windows: from each fault to
its recovery plus FAULT_GRACE), `step_p95_outside_faults`, `stayed_idle` (annotators who stayed
but got no new page after the last fault) and `vanished_pair_release_s_max` (the longest a
vanished annotator's pair stayed held against others: from the vanishing until the assignment
rules release it, or would release it for anyone who needs it, annotate/queue/rules.py rule 8,
polled every VANISH_POLL seconds). Every simulated tab sends the form's heartbeat.

    python benchmarks/bench_crowd.py --faults --annotators 200 --minutes 10 --replicas 2 \
        --private-postgres --replica-kills 2 --db-restarts 1 --vanish 0.1

Without `--url` it creates the study (pairs shaped like the real data unless `--pairs-file`,
300 past posts a pair, enough pairs that nobody runs out), one account per annotator, starts
`--replicas` `annotate serve` processes and stops them at the end. With `--url` (repeatable, one
per running replica) it uses those servers and the study `--study` in `--db`; it then creates
the annotators' accounts there and cannot measure the servers' CPU and memory (null).

At the end it prints one JSON line (keys in `KEYS`); the database is checked afterwards:
`lost` = answers acknowledged (the next pair shown) but not stored, `duplicated` = more than one
row for a (pair, annotator), `over_target` = pairs with more answers than the study's overlap.

CPU: every process of each replica (`/proc/PID/stat`, children included) over the crowd's run,
divided by the Submits: `cpu_s_per_pair` (drafts included). `draft_cpu_vs_submit` comes from a
calibration before the crowd arrives (one annotator alone on replica 1: DRAFTS_PER_SUBMIT x
`--calibrate` drafts, then `--calibrate` Submits, then `--calibrate` page runs alone
(`page_cpu_s`: a rerun showing the same pair, as after a reload), the replica's CPU measured
around each series;
a draft costs about a millisecond and /proc counts CPU in 10 ms ticks, so 20 drafts alone were
read to +-40 %): the crowd's messages
cannot be told apart in a process's CPU time. `annotators_per_core` = pace / cpu_s_per_pair:
how many annotators at this pace one fully used core serves.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import websockets  # noqa: E402
from streamlit.proto.BackMsg_pb2 import BackMsg  # noqa: E402
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg  # noqa: E402
from websockets.asyncio.client import ClientConnection  # noqa: E402
from websockets.typing import Origin, Subprotocol  # noqa: E402

KEYS = (
    "annotators",
    "replicas",
    "db",
    "pace",
    "seconds",
    "submits",
    "drafts",
    "errors",
    "lost",
    "duplicated",
    "over_target",
    "starved",
    "step_p50",
    "step_p95",
    "step_p99",
    "signin_p95",
    "cpu_s_per_pair",
    "draft_cpu_s",
    "submit_cpu_s",
    "page_cpu_s",
    "draft_cpu_vs_submit",
    "rss_mb",
    "annotators_per_core",
    "client_cpu_s",
    "load_avg",
    "cores",
    "server_cpu_s",
    "db_cpu_s",
    "faults",
    "longest_stall_s",
    "step_p95_outside_faults",
    "stayed_idle",
    "vanished_pair_release_s_max",
)
DRAFT_SECONDS = 4.0  # the page's DRAFT_MS
DRAFTS_PER_SUBMIT = 10  # calibration: drafts timed per Submit timed (see the docstring)
PACE_SIGMA = 0.5  # log-normal spread of the think time per pair (about 0.45x to 2.2x the median)
STUDY = "crowd"
COOKIE = "annotate_token"
EVENTS_SUFFIX = "__events"
WIDGET_PREFIX = "$$STREAMLIT_INTERNAL_KEY_"
READ_TIMEOUT = 60.0
FAULT_GRACE = 5.0  # seconds after a fault's recovery still counted in its window
VANISH_POLL = 2.0  # seconds between looks at the vanished annotators' pairs
RECONNECT_EVERY = 1.0  # a tab whose connection dropped tries again this often


TABS_PER_ADDRESS = 8  # below the server's page sockets per client (web/guard.py: 16)


def source_address(base_url: str, index: int) -> str | None:
    """Where annotator `index` connects from: on a loopback server, one of 127.0.0.2-254,
    a few annotators an address, as a crowd comes from many homes (the server allows at most
    16 page sockets per client address); elsewhere the system's choice."""
    if urlsplit(base_url).hostname != "127.0.0.1":
        return None
    # in many /24s: nginx's ip_hash keys on an IPv4 address's first three octets
    home = index // TABS_PER_ADDRESS
    return f"127.{1 + home % 250}.{home // 250 % 250}.2"


# --- one simulated annotator --------------------------------------------------------------
class ProtocolError(Exception):
    """The server said something a browser would show as an error (or said nothing)."""


@dataclass
class Page:
    """What one page run showed: the labelling form's data and component id, if any."""

    component_id: str | None = None
    fragment_id: str = ""  # the fragment that drew the form: its events rerun that alone
    data: dict | None = None
    exception: str | None = None
    finished: bool = False
    texts: list[str] = field(default_factory=list)


def shown(page: Page) -> dict:
    """The form's data of a page that shows a pair."""
    if page.data is None:
        raise ProtocolError("the page shows no pair")
    return page.data


@dataclass
class Stats:
    secret: str | None = None  # the study's secret, to read the drafts' handles
    steps: list[float] = field(default_factory=list)
    signins: list[float] = field(default_factory=list)
    submits: int = 0
    drafts: int = 0
    errors: list[str] = field(default_factory=list)
    starved: int = 0
    acknowledged: list[tuple[str, int]] = field(default_factory=list)  # (annotator, assignment)
    # (started, ended) of every wait for the server by an annotator who stayed: page loads,
    # Submits, sign-ins, reconnects (monotonic seconds)
    waits: list[tuple[float, float]] = field(default_factory=list)
    last_page: dict[str, float] = field(default_factory=dict)  # annotator -> last new page
    vanished: list[tuple[str, int, float]] = field(default_factory=list)  # name, assignment, when
    silent: list[Any] = field(default_factory=list)  # the vanished tabs' open sockets
    fault_windows: list[list[float]] = field(default_factory=list)  # [start, end]
    faults: dict[str, int] = field(
        default_factory=lambda: {"replica_kills": 0, "db_restarts": 0, "vanished": 0}
    )
    heartbeats: int = 0
    step_spans: list[tuple[float, float]] = field(default_factory=list)  # Submit to next page
    db_cpu_carry: float = 0.0  # CPU of the database's processes stopped by its restarts

    def assignment_of(self, draft: dict) -> int:
        """The assignment a draft names by its handle (no id reaches the page)."""
        from annotate.labelling.drafts import handle_assignment

        assignment = handle_assignment(draft["handle"], secret=self.secret)
        if assignment is None:
            raise RuntimeError("a draft handle that does not read back with the study's secret")
        return assignment


class Client:
    """One browser tab's websocket conversation with a replica."""

    def __init__(
        self,
        base_url: str,
        token: str,
        name: str,
        *,
        address: str | None = None,
        source: str | None = None,
    ):
        """`address`: the network address this annotator has as a proxy in front of the app
        forwards it (`X-Forwarded-For`, believed from FORWARDED_ALLOW_IPS, by default the
        local host); `source`: the local address the tab connects from (None: the system's
        choice; see source_address). Either way one machine's simulated crowd is many
        clients, as on launch day, not one client past the per-client socket limit
        (annotate/web/guard.py)."""
        self.base = base_url.rstrip("/")
        self.forwarded = {"X-Forwarded-For": address} if address else {}
        self.local = None if source is None else (source, 0)
        self.token = token
        self.name = name
        self.cookie = ""
        self.ws: ClientConnection | None = None
        self.page_hash = ""
        self.cached: set[str] = set()
        self.forms: dict[str, tuple[str, str, dict | None]] = {}  # hash -> the form it carried

    async def sign_in(self) -> None:
        """GET /?token=... : the app answers with a redirect and the login cookie."""
        parts = urlsplit(self.base)
        reader, writer = await asyncio.open_connection(
            parts.hostname, parts.port or 80, local_addr=self.local
        )
        path = (parts.path or "") + f"/?token={self.token}"
        forwarded = "".join(f"{name}: {value}\r\n" for name, value in self.forwarded.items())
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nSec-Fetch-Site: none\r\n"
            f"{forwarded}Connection: close\r\n\r\n".encode()
        )
        await writer.drain()
        head = await asyncio.wait_for(reader.read(65536), READ_TIMEOUT)
        writer.close()
        status = head.split(b"\r\n", 1)[0].decode()
        for line in head.decode("latin-1").split("\r\n"):
            if line.lower().startswith("set-cookie:") and f"{COOKIE}=" in line:
                self.cookie = line.split(":", 1)[1].strip().split(";", 1)[0]
        if not self.cookie:
            if " 50" in status:  # a proxy with no replica behind it: try again, as a person does
                raise ConnectionError(f"sign-in: {status}")
            raise ProtocolError(f"sign-in gave no cookie ({status})")

    async def connect(self) -> Page:
        parts = urlsplit(self.base)
        scheme = "wss" if parts.scheme == "https" else "ws"
        self.ws = await websockets.connect(
            f"{scheme}://{parts.netloc}{parts.path}/_stcore/stream",
            subprotocols=[Subprotocol("streamlit")],
            origin=Origin(f"{parts.scheme}://{parts.netloc}"),
            additional_headers={"Cookie": self.cookie, **self.forwarded},
            max_size=None,
            open_timeout=READ_TIMEOUT,
            local_addr=self.local,
        )
        return await self.rerun()

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def close_quietly(self) -> None:
        """Close the websocket, whatever state it is in (a dropped one included)."""
        ws, self.ws = self.ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 5)

    async def rerun(self, widget_states=None, fragment_id: str = "") -> Page:
        """Send a rerun (with these widget states; of this fragment alone, as the browser
        does for a widget drawn in one) and read until that run has finished."""
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = ""
        state.page_script_hash = self.page_hash
        state.fragment_id = fragment_id
        state.cached_message_hashes.extend(sorted(self.cached))
        for widget in widget_states or ():
            state.widget_states.widgets.append(widget)
        await self._socket().send(msg.SerializeToString())
        return await self.read_run()

    def _socket(self) -> ClientConnection:
        if self.ws is None:
            raise ProtocolError("not connected")
        return self.ws

    async def read_run(self) -> Page:
        page = Page()
        ws = self._socket()
        while True:
            raw = await asyncio.wait_for(ws.recv(), READ_TIMEOUT)
            fwd = ForwardMsg.FromString(raw)
            kind = fwd.WhichOneof("type")
            if kind == "new_session":
                self.page_hash = fwd.new_session.page_script_hash or self.page_hash
                page = Page()  # a new run starts: what came before was another run's
            elif kind == "ref_hash":  # a message this client has: resolve it from its cache
                if fwd.ref_hash in self.forms:
                    page.component_id, page.fragment_id, page.data = self.forms[fwd.ref_hash]
            elif kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                element = fwd.delta.new_element
                which = element.WhichOneof("type")
                if which == "bidi_component":
                    bidi = element.bidi_component
                    text = bidi.json or (bidi.mixed.json if bidi.HasField("mixed") else "")
                    page.component_id = bidi.id
                    page.fragment_id = fwd.delta.fragment_id
                    page.data = json.loads(text) if text else None
                    if fwd.metadata.cacheable and fwd.hash:
                        if len(self.forms) > 8:  # the browser's cache is bounded too
                            self.cached.difference_update(self.forms)
                            self.forms.clear()
                        self.cached.add(fwd.hash)
                        self.forms[fwd.hash] = (page.component_id, page.fragment_id, page.data)
                elif which == "exception":
                    page.exception = f"{element.exception.type}: {element.exception.message}"
                elif which in ("alert", "markdown"):
                    body = getattr(element, which).body
                    page.texts.append(body)
            elif kind == "script_finished":
                status = fwd.script_finished
                if status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:  # a newer run follows
                    continue
                if status == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    raise ProtocolError("the page script failed to compile")
                page.finished = True
                return page

    async def draft(self, page: Page, form: dict, seconds: float) -> Page:
        """A draft as the page sends it: a POST to the form's draft address when it has one
        (annotate/web/drafts.py), else (or when that fails) the component's event."""
        where = (page.data or {}).get("draft")
        if not where:
            return await self.event(page, "draft", {"form": form, "seconds": seconds})
        status = await self.post_draft(where, {"form": form, "seconds": seconds})
        if " 204 " not in status:
            return await self.event(page, "draft", {"form": form, "seconds": seconds})
        return page

    async def heartbeat(self, page: Page) -> str:
        """The shown form's "still here" (`back`), as the page sends it every few seconds."""
        where = (page.data or {}).get("draft")
        if not where:
            return ""
        return await self.post_draft(where, {"back": True})

    async def post_draft(self, where: dict, extra: dict) -> str:
        """POST to the form's draft address; the response's status line."""
        parts = urlsplit(self.base)
        fields = {"handle": where["handle"], "key": where["key"]}
        body = json.dumps({**fields, **extra}).encode()
        reader, writer = await asyncio.open_connection(
            parts.hostname, parts.port or 80, local_addr=self.local
        )
        try:
            writer.write(
                f"POST {where['url']} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                f"Origin: {parts.scheme}://{parts.netloc}\r\nSec-Fetch-Site: same-origin\r\n"
                f"Cookie: {self.cookie}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
            status = (await asyncio.wait_for(reader.readline(), READ_TIMEOUT)).decode()
        finally:
            writer.close()
        return status

    async def event(self, page: Page, name: str, value) -> Page:
        """The component's setTriggerValue(name, value), as the page sends it."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        # The component's own state (none kept: an empty mapping), which the browser sends
        # with every rerun and into which Streamlit merges the events, and the event itself.
        if page.component_id is None:
            raise ProtocolError(f"no form on the page for the {name!r} event")
        state = WidgetState(id=page.component_id, json_value="{}")
        trigger = WidgetState(id=f"{WIDGET_PREFIX}{page.component_id}{EVENTS_SUFFIX}")
        trigger.json_trigger_value = json.dumps([{"event": name, "value": value}])
        reply = await self.rerun([state, trigger], fragment_id=page.fragment_id)
        if reply.component_id is None and page.fragment_id and not reply.exception:
            # a fragment's run that resent nothing new: the form on screen stays
            reply.component_id, reply.fragment_id, reply.data = (
                page.component_id,
                page.fragment_id,
                page.data,
            )
        return reply


def answers_for(data: dict, rng: random.Random) -> list[tuple[str, str, object]]:
    """The keys a careful annotator presses for this form: (kind, field, value) in order."""
    keys: list[tuple[str, str, object]] = [("slot", "", rng.choice(["A", "B"]))]
    scale = data["scale"]
    for cell in data["order"]:
        if cell["kind"] == "rating":
            keys.append(("rating", cell["field"], rng.choice(scale[len(scale) // 2 :])))
        elif cell["kind"] == "aspect":
            keys.append(("aspect", cell["field"], rng.choice([0, 1, 2])))
    if data.get("reasons"):
        keys.append(("reason", "", data["reasons"][0][0]))
    return keys


def apply_key(form: dict, key: tuple[str, str, object]) -> None:
    kind, name, value = key
    if kind == "slot":
        form["slot"] = value
    elif kind == "reason":
        form["reason"] = value
    elif kind == "rating":
        form.setdefault("ratings", {})[name] = value
    else:
        form.setdefault("aspects", {})[name] = value


# What a dropped connection looks like to a tab (a replica killed, nginx with nobody behind it):
# in a long day's run the tab reconnects and goes on, as the page does.
DROPPED = (websockets.exceptions.WebSocketException, OSError, asyncio.TimeoutError, EOFError)


class Vanished(Exception):
    """The simulated annotator vanished mid-pair (no close: the socket stays open, silent)."""


async def annotator(
    *,
    base_url: str,
    token: str,
    name: str,
    pace: float,
    start_at: float,
    stop_at: float,
    seed: int,
    stats: Stats,
    index: int = 0,
    reconnect: bool = False,
    vanish: bool = False,
) -> None:
    """One simulated annotator from sign-in to the end of the run. `reconnect`: a dropped
    connection is retried (a long day's faults) instead of counted as an error; `vanish`: the
    annotator disappears mid-pair, some time after their first answer."""
    rng = random.Random(seed)
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    client = Client(base_url, token, name, source=source_address(base_url, index))
    vanish_after = rng.uniform(0.2, 0.8) if vanish else None  # of the second pair's think time
    page: Page | None = None
    labelled = 0
    try:
        while time.monotonic() < stop_at:
            began = time.monotonic()
            try:
                if page is None:  # sign in and load the page (again, after a drop)
                    if not client.cookie:
                        await client.sign_in()
                    await client.close_quietly()
                    page = await client.connect()
                    stats.waits.append((began, time.monotonic()))
                    if name not in stats.last_page:  # the first sign-in, not a reconnect
                        stats.signins.append(time.monotonic() - began)
                    stats.last_page[name] = time.monotonic()
                    continue
                if page.exception:
                    raise ProtocolError(f"on screen: {page.exception}")
                if page.data is None:  # no pair: finished, or told to come back later
                    stats.starved += 1
                    await asyncio.sleep(min(30.0, max(0.0, stop_at - time.monotonic())))
                    if time.monotonic() < stop_at:
                        page = await client.rerun()
                    continue
                after = await label_one(
                    client,
                    page,
                    pace=pace,
                    rng=rng,
                    stop_at=stop_at,
                    stats=stats,
                    vanish_after=vanish_after if labelled else None,
                )
                if after is None:
                    return
                page = after
                labelled += 1
            except DROPPED:
                if not reconnect:
                    raise
                page = None  # the page reconnects (through the proxy, to a replica that is up)
                await asyncio.sleep(RECONNECT_EVERY)
    except Vanished:
        return
    except Exception as exc:
        stats.errors.append(f"{name}: {type(exc).__name__}: {exc}"[:300])
    finally:
        if client.ws is None or client.ws not in stats.silent:
            await client.close_quietly()  # a vanished tab's socket stays open until the end


async def label_one(
    client: Client,
    page: Page,
    *,
    pace: float,
    rng: random.Random,
    stop_at: float,
    stats: Stats,
    vanish_after: float | None = None,
) -> Page | None:
    """Think, type the answers with drafts and heartbeats as the page sends them, submit; the
    next page. `vanish_after`: vanish at this share of the think time instead (Vanished)."""
    data = shown(page)
    think = rng.lognormvariate(math.log(pace), PACE_SIGMA)
    keys = answers_for(data, rng)
    started = time.monotonic()
    key_times = sorted(rng.uniform(0.1 * think, 0.95 * think) for _ in keys)
    form = json.loads(json.dumps(data["initial"]))
    dirty, draft_due = False, None
    beat = float((data.get("draft") or {}).get("heartbeat") or 0) or None
    beat_due = beat
    vanish_at = None if vanish_after is None else vanish_after * think
    pending = list(zip(key_times, keys, strict=True))
    while True:
        now = time.monotonic() - started
        next_key = pending[0][0] if pending else None
        events = [t for t in (next_key, draft_due, beat_due, vanish_at, think) if t is not None]
        when = min(events)
        if started + when > stop_at:
            return None  # the run ends mid-pair: the tab is left as it is
        await asyncio.sleep(max(0.0, when - now))
        if vanish_at is not None and when == vanish_at:
            # gone without a word: the socket stays open and silent (see the docstring)
            stats.silent.append(client.ws)
            stats.vanished.append((client.name, stats.assignment_of(data["draft"]), time.time()))
            stats.faults["vanished"] += 1
            raise Vanished
        if beat_due is not None and when == beat_due:
            beat_due = when + (beat or 0)
            await client.heartbeat(page)
            stats.heartbeats += 1
            continue
        if draft_due is not None and when == draft_due:
            draft_due = None
            if dirty:
                dirty = False
                reply = await client.draft(page, form, round(when, 1))
                stats.drafts += 1
                if reply.exception:
                    raise ProtocolError(f"draft: {reply.exception}")
            continue
        if pending and when == next_key:
            apply_key(form, pending.pop(0)[1])
            dirty = True
            if draft_due is None:
                draft_due = when + DRAFT_SECONDS
            continue
        break  # think time over: Submit
    sent = time.monotonic()
    reply = await client.event(page, "submit", {"form": form, "seconds": round(think, 1)})
    if reply.exception:
        raise ProtocolError(f"submit: {reply.exception}")
    if reply.data is not None and reply.data.get("refused"):
        raise ProtocolError(f"submit refused: {reply.data['refused']}")
    if reply.data is not None and reply.data.get("token") == data.get("token"):
        raise ProtocolError("submit: the same pair shown again")
    done = time.monotonic()
    stats.steps.append(done - sent)
    stats.waits.append((sent, done))
    stats.step_spans.append((sent, done))
    stats.last_page[client.name] = done
    stats.submits += 1
    # the page's token is opaque (docs/security.md, N6); the draft's handle names the assignment
    stats.acknowledged.append((client.name, stats.assignment_of(data["draft"])))
    return reply


# --- the replicas ---------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tree(pid: int) -> list[int]:
    """The process and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        todo.extend(int(c) for c in children)
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU of the process and its descendants (live ones), seconds."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def rss_mb(pid: int) -> float:
    total = 0
    for p in tree(pid):
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return round(total / 1024, 1)


class Replica:
    def __init__(self, db: str, workdir: Path, *, env: dict[str, str] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(workdir / f"replica-{self.port}.log", "ab")  # noqa: SIM115
        self.db, self.workdir, self.env = db, workdir, env or {}
        self.cpu_before = 0.0  # CPU of the processes killed earlier (a long day's faults)
        self.process = self._start()

    def _start(self) -> subprocess.Popen:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", **self.env}
        command = ["serve", "--port", str(self.port), "--db", self.db]
        return subprocess.Popen(
            [sys.executable, "-m", "annotate.cli", *command],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
            env=env,
            start_new_session=True,
        )

    def kill_and_restart(self) -> None:
        """SIGKILL the replica (every process of it), then start it again on its port."""
        self.cpu_before += self.cpu()
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = self._start()
        self.wait_ready()

    def wait_ready(self, timeout: float = 120.0) -> None:
        import urllib.request

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"replica on port {self.port} stopped: see {self.log.name}")
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.read() == b"ok":
                        return
            except OSError:
                pass
            time.sleep(0.3)
        raise SystemExit(f"replica on port {self.port} did not start in {timeout:.0f} s")

    def cpu(self) -> float:
        return self.cpu_before + cpu_seconds(self.process.pid)

    def rss(self) -> float:
        return rss_mb(self.process.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


# --- the study ------------------------------------------------------------------------------
def make_pairs(path: Path, n: int, *, posts: int, seed: int) -> None:
    from tests.realistic_pairs import realistic_record

    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            out.write(json.dumps(realistic_record(rng, i, posts=posts)) + "\n")


def annotate_cli(*args: str, cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "annotate.cli", *args], cwd=cwd, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"annotate {' '.join(args[:2])} failed: {done.stderr.strip()}")


def prepare_study(args, workdir: Path) -> None:
    pairs_file = args.pairs_file
    if pairs_file is None:
        pairs_file = workdir / "pairs.jsonl"
        make_pairs(pairs_file, args.n_pairs, posts=args.posts, seed=args.seed)
    annotate_cli(
        "import-pairs", str(pairs_file), "--study", args.study, "--db", args.db, cwd=workdir
    )
    annotate_cli(
        "configure-study", args.study, "--overlap", str(args.overlap), "--db", args.db, cwd=workdir
    )


def study_secret(db: str, study_name: str) -> str | None:
    from sqlmodel import select

    from annotate.engine import get_engine
    from annotate.store.db import session
    from annotate.store.models import Study

    engine = get_engine(db)
    with session(engine) as s:
        secret = s.exec(select(Study).where(Study.name == study_name)).one().coin_secret
    engine.dispose()
    return secret


def make_accounts(db: str, study_name: str, n: int, prefix: str) -> list[tuple[str, str]]:
    from sqlmodel import select

    from annotate.engine import get_engine
    from annotate.people.auth import create_annotator
    from annotate.store.db import session
    from annotate.store.models import Study

    engine = get_engine(db)
    accounts = []
    with session(engine) as s:
        study = s.exec(select(Study).where(Study.name == study_name)).one()
        study.guidelines = ""  # straight to the first pair, as after the guidelines were read
        s.add(study)
        for i in range(n):
            name = f"{prefix}{i:04d}"
            accounts.append((name, create_annotator(s, name=name, study_id=study.id)[1]))
    engine.dispose()
    return accounts


def check_database(db: str, study_name: str, acknowledged: list[tuple[str, int]]) -> dict:
    from sqlalchemy import func
    from sqlmodel import col, select

    from annotate.engine import get_engine
    from annotate.store.db import read_session
    from annotate.store.models import Annotation, Annotator, Assignment, Pair, Study

    engine = get_engine(db)
    with read_session(engine) as s:
        study = s.exec(select(Study).where(Study.name == study_name)).one()
        rows = s.exec(
            select(Annotation.pair_id, Annotation.annotator_id, func.count())
            .where(Annotation.study_id == study.id)
            .group_by(col(Annotation.pair_id), col(Annotation.annotator_id))
        ).all()
        duplicated = sum(n - 1 for _, _, n in rows if n > 1)
        per_pair: dict[int, int] = {}
        for pair_id, _, _ in rows:
            per_pair[pair_id] = per_pair.get(pair_id, 0) + 1
        gold = set(s.exec(select(Pair.id).where(Pair.study_id == study.id, Pair.is_gold)).all())
        over = sum(
            1 for pair_id, n in per_pair.items() if pair_id not in gold and n > study.overlap_target
        )
        stored = {(p, a) for p, a, _ in rows}
        names = dict(s.exec(select(Annotator.name, Annotator.id)).all())
        held = dict(
            s.exec(
                select(Assignment.id, Assignment.pair_id).where(Assignment.study_id == study.id)
            ).all()
        )
    engine.dispose()
    lost = sum(
        1
        for name, assignment in acknowledged
        if (held.get(assignment), names.get(name)) not in stored
    )
    return {"lost": lost, "duplicated": duplicated, "over_target": over}


# --- calibration: the CPU of one draft and of one Submit --------------------------------------
async def calibrate(replica: Replica, token: str, n: int, seed: int) -> tuple[float, float, float]:
    """Server CPU of one draft, of one Submit (with the page run that shows the next pair) and
    of one page run alone (a rerun showing the same pair, as after a reload), one annotator
    alone on the replica: DRAFTS_PER_SUBMIT x `n` drafts, `n` Submits, `n` page runs."""
    rng = random.Random(seed)
    client = Client(replica.url, token, "calibration")
    await client.sign_in()
    page = await client.connect()
    for _ in range(3):  # warm the page's code paths first
        page = await client.draft(page, shown(page)["initial"], 0.0)
    form = shown(page)["initial"]
    drafts = n * DRAFTS_PER_SUBMIT
    before = replica.cpu()
    for i in range(drafts):
        apply_key(form, answers_for(shown(page), rng)[i % 3])
        reply = await client.draft(page, form, float(i))
        if reply.exception:
            raise SystemExit(f"calibration draft failed: {reply.exception}")
    draft_cpu = (replica.cpu() - before) / drafts
    before = replica.cpu()
    for _ in range(n):
        form = json.loads(json.dumps(shown(page)["initial"]))
        for key in answers_for(shown(page), rng):
            apply_key(form, key)
        token = shown(page)["token"]
        page = await client.event(page, "submit", {"form": form, "seconds": 5.0})
        if page.data is None or page.exception or page.data["token"] == token:
            raise SystemExit("a calibration Submit failed or the pairs ran out")
    submit_cpu = (replica.cpu() - before) / n
    before = replica.cpu()
    for _ in range(n):
        page = await client.rerun()
        if page.data is None or page.exception:
            raise SystemExit("a calibration page run failed")
    page_cpu = (replica.cpu() - before) / n
    await client.close()
    return draft_cpu, submit_cpu, page_cpu


# --- the run --------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)], 3)


def crowd_address(i: int) -> str:
    """The i-th simulated annotator's own network address (a private one: 10.x.y.z)."""
    return f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"


async def crowd(args, urls, accounts, stats: Stats, on_warm, faults=None) -> float:
    """The crowd's run; `faults`: the long day's schedule (a coroutine started with it)."""
    began = time.monotonic()
    stop_at = began + args.minutes * 60
    chooser = random.Random(args.seed)
    vanishing = set(chooser.sample(range(len(accounts)), round(args.vanish * len(accounts))))
    tasks = [
        asyncio.create_task(
            annotator(
                base_url=urls[i % len(urls)],
                token=token,
                name=name,
                pace=args.pace,
                start_at=began + args.ramp * i / max(1, len(accounts)),
                stop_at=stop_at,
                seed=args.seed * 100003 + i,
                stats=stats,
                index=i,
                reconnect=args.faults,
                vanish=i in vanishing,
            )
        )
        for i, (name, token) in enumerate(accounts)
    ]
    background = [asyncio.create_task(faults(began, stop_at))] if faults is not None else []
    warm_at = began + args.warmup * 60
    warmed = False
    while not all(t.done() for t in tasks):
        await asyncio.sleep(1.0)
        if not warmed and time.monotonic() >= warm_at:
            on_warm()
            warmed = True
    if not warmed:
        on_warm()
    seconds = time.monotonic() - began
    for task in background:
        await task
    for ws in stats.silent:  # the vanished tabs' sockets, open until now
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ws.close(), 5)
    return seconds


# --- a long day's faults ------------------------------------------------------------------
def fault_plan(args) -> list[str]:
    """The faults in the order they come: replica kills and database restarts interleaved."""
    kills, restarts = ["replica"] * args.replica_kills, ["database"] * args.db_restarts
    plan: list[str] = []
    while kills or restarts:
        for queue in (kills, restarts):
            if queue:
                plan.append(queue.pop())
    return plan


def make_faults(args, replicas: list[Replica], database, stats: Stats):
    """The coroutine that injects the faults of fault_plan, evenly spread over the run after
    the ramp (the last one with at least a fifth of the run left after it)."""

    async def inject(began: float, stop_at: float) -> None:
        plan = fault_plan(args)
        first = began + max(args.ramp, 10.0)
        last = began + (stop_at - began) * 0.8
        for n, kind in enumerate(plan):
            at = first + (last - first) * (n + 0.5) / len(plan)
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            window = [time.monotonic(), math.inf]
            stats.fault_windows.append(window)
            if kind == "replica":
                replica = replicas[stats.faults["replica_kills"] % len(replicas)]
                await asyncio.to_thread(replica.kill_and_restart)
                stats.faults["replica_kills"] += 1
            else:
                stats.db_cpu_carry += database_cpu(database)
                await asyncio.to_thread(database.restart, down_seconds=args.db_down)
                stats.faults["db_restarts"] += 1
            window[1] = time.monotonic() + FAULT_GRACE

    return inject


def database_cpu(database) -> float:
    """CPU seconds of the private PostgreSQL's processes alive now (0 when it is down)."""
    pid = database.pid()
    return 0.0 if pid is None else cpu_seconds(pid)


def outside_faults(waits: list[tuple[float, float]], windows: list[list[float]]) -> list[float]:
    """How long each wait took, for the waits that overlap no fault window."""
    return [
        end - start
        for start, end in waits
        if not any(start < w_end and end > w_start for w_start, w_end in windows)
    ]


def watch_vanished(db: str, stats: Stats, stop: threading.Event) -> dict[int, float]:
    """Every VANISH_POLL seconds until `stop`: for each vanished annotator's assignment, the
    first time it was released, or the rules would release it to anyone who needs it (rule 8
    of annotate/queue/rules.py: its page silent for GONE_HOLD); seconds after the vanishing."""
    from sqlalchemy import select as core_select

    from annotate.engine import get_engine
    from annotate.queue.assignment import LAST_SEEN
    from annotate.queue.rules import gone_hold
    from annotate.store.clock import as_utc
    from annotate.store.models import Assignment, table_of

    table = table_of(Assignment)
    engine = get_engine(db)
    released: dict[int, float] = {}
    hold = gone_hold()
    while not stop.wait(VANISH_POLL):
        waiting = {a: when for _, a, when in list(stats.vanished) if a not in released}
        if not waiting:
            continue
        try:
            with engine.connect() as conn:
                rows = conn.execute(
                    core_select(table.c.id, table.c.status, LAST_SEEN).where(
                        table.c.id.in_(list(waiting))
                    )
                ).all()
        except Exception:  # the database is restarting: look again later
            continue
        now = time.time()
        for assignment_id, status, seen in rows:
            free = status != "active" or as_utc(seen).timestamp() + hold <= now
            if free:
                released[assignment_id] = max(0.0, now - waiting[assignment_id])
    engine.dispose()
    return released


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--replicas", type=int, default=1)
    parser.add_argument("--db", help="database URL (default: a new SQLite file in a temp dir)")
    parser.add_argument("--pace", type=float, default=40.0, help="median seconds per pair")
    parser.add_argument("--pairs-file", type=Path, help="pairs to import (default: made here)")
    parser.add_argument("--url", action="append", help="a running replica (repeatable)")
    parser.add_argument("--study", default=STUDY)
    parser.add_argument("--overlap", type=int, default=3)
    parser.add_argument("--posts", type=int, default=300, help="past posts per made pair")
    parser.add_argument("--n-pairs", type=int, help="pairs to make (default: enough for the run)")
    parser.add_argument("--ramp", type=float, default=10.0, help="seconds over which all arrive")
    parser.add_argument("--warmup", type=float, help="minutes of warm-up (default min(2, M/5))")
    parser.add_argument(
        "--calibrate", type=int, default=20, help="Submits (and 10x drafts) timed alone (0: none)"
    )
    parser.add_argument("--seed", type=int, default=0)
    day = parser.add_argument_group("a long day (--faults)")
    day.add_argument("--faults", action="store_true", help="nginx in front, faults on a schedule")
    day.add_argument("--replica-kills", type=int, default=2, help="replicas killed and restarted")
    day.add_argument(
        "--db-restarts", type=int, help="PostgreSQL restarts (default 1 with --private-postgres)"
    )
    day.add_argument("--db-down", type=float, default=5.0, help="seconds PostgreSQL stays down")
    day.add_argument("--vanish", type=float, help="share of annotators who vanish (default 0.1)")
    parser.add_argument(
        "--private-postgres",
        action="store_true",
        help="the database on a PostgreSQL cluster of the benchmark's own (initdb in a temp dir)",
    )
    parser.add_argument("--gone-hold", type=int, help="the replicas' ANNOTATE_GONE_HOLD seconds")
    args = parser.parse_args(argv)
    if args.vanish is None:
        args.vanish = 0.1 if args.faults else 0.0
    if args.db_restarts is None:
        args.db_restarts = 1 if args.faults and args.private_postgres else 0
    if not args.faults:
        args.replica_kills = args.db_restarts = 0
    if args.db_restarts and not args.private_postgres:
        parser.error(
            "--db-restarts restarts a cluster of the benchmark's own: add --private-postgres"
        )
    if args.faults and args.url:
        parser.error("--faults starts its own replicas: leave out --url")
    if args.gone_hold is not None:
        os.environ["ANNOTATE_GONE_HOLD"] = str(args.gone_hold)  # the replicas and the watcher
    if args.warmup is None:
        args.warmup = min(2.0, args.minutes / 5)
    expected = args.annotators * args.minutes * 60 / args.pace * math.exp(PACE_SIGMA**2)
    if args.n_pairs is None:
        args.n_pairs = (
            int(expected * 1.5 / args.overlap) + args.annotators + 2 * args.calibrate + 20
        )

    workdir = Path(tempfile.mkdtemp(prefix="bench-crowd-"))
    database = proxy = None
    if args.private_postgres:
        from tests.private_postgres import PrivatePostgres

        database = PrivatePostgres().start()
        args.db = database.url("crowd")
    if args.db is None:
        args.db = f"sqlite:///{workdir / 'crowd.db'}"
    replicas: list[Replica] = []
    stats = Stats()
    stop_watch = threading.Event()
    released: dict[int, float] = {}
    watcher = threading.Thread(
        target=lambda: released.update(watch_vanished(args.db, stats, stop_watch)), daemon=True
    )
    try:
        if args.url:
            urls = args.url
        else:
            prepare_study(args, workdir)
            replicas = [Replica(args.db, workdir) for _ in range(args.replicas)]
            for replica in replicas:
                replica.wait_ready()
            urls = [r.url for r in replicas]
        if args.faults:
            from tests.nginx import Nginx

            proxy = Nginx([r.port for r in replicas], workdir).start()
            urls = [proxy.url]
        if args.vanish:
            watcher.start()
        accounts = make_accounts(args.db, args.study, args.annotators, f"crowd{os.getpid()}-")
        stats.secret = study_secret(args.db, args.study)
        draft_cpu = submit_cpu = page_cpu = None
        if replicas and args.calibrate:
            ((_, calib_token),) = make_accounts(args.db, args.study, 1, f"calib{os.getpid()}-")
            draft_cpu, submit_cpu, page_cpu = asyncio.run(
                calibrate(replicas[0], calib_token, args.calibrate, args.seed)
            )
        rss_warm: list[float] = []
        cpu_start = [r.cpu() for r in replicas]
        db_cpu_start = database_cpu(database) if database is not None else 0.0
        client_start = resource.getrusage(resource.RUSAGE_SELF)
        faults = make_faults(args, replicas, database, stats) if args.faults else None
        seconds = asyncio.run(
            crowd(
                args,
                urls,
                accounts,
                stats,
                lambda: rss_warm.extend(r.rss() for r in replicas),
                faults,
            )
        )
        client_end = resource.getrusage(resource.RUSAGE_SELF)
        server_cpu = sum(r.cpu() - c for r, c in zip(replicas, cpu_start, strict=True))
        db_cpu = (
            None if database is None else database_cpu(database) + stats.db_cpu_carry - db_cpu_start
        )
        rss_end = [r.rss() for r in replicas]
        load = os.getloadavg()
        stop_watch.set()
        if watcher.is_alive():
            watcher.join(timeout=30)
    finally:
        stop_watch.set()
        if proxy is not None:
            proxy.stop()
        for replica in replicas:
            replica.stop()
    checks = check_database(args.db, args.study, stats.acknowledged)
    if database is not None:
        database.stop("immediate")
    vanished_ids = [a for _, a, _ in stats.vanished]
    never = [a for a in vanished_ids if a not in released]  # still held when the run ended
    stayed = {name for name, _ in accounts} - {name for name, _, _ in stats.vanished}
    last_fault = max((end for _, end in stats.fault_windows), default=0.0)
    outside = outside_faults(stats.waits, stats.fault_windows)
    cpu_per_pair = server_cpu / stats.submits if replicas and stats.submits else None
    result = {
        "annotators": args.annotators,
        "replicas": len(replicas) or len(urls),
        "db": args.db.split(":", 1)[0].split("+")[0],
        "pace": args.pace,
        "seconds": round(seconds, 1),
        "submits": stats.submits,
        "drafts": stats.drafts,
        "errors": len(stats.errors),
        **checks,
        "starved": stats.starved,
        "step_p50": percentile(stats.steps, 0.50),
        "step_p95": percentile(stats.steps, 0.95),
        "step_p99": percentile(stats.steps, 0.99),
        "signin_p95": percentile(stats.signins, 0.95),
        "cpu_s_per_pair": None if cpu_per_pair is None else round(cpu_per_pair, 4),
        "draft_cpu_s": None if draft_cpu is None else round(draft_cpu, 4),
        "submit_cpu_s": None if submit_cpu is None else round(submit_cpu, 4),
        "page_cpu_s": None if page_cpu is None else round(page_cpu, 4),
        "draft_cpu_vs_submit": round(draft_cpu / submit_cpu, 3)
        if draft_cpu is not None and submit_cpu
        else None,
        "rss_mb": [{"warm": w, "end": e} for w, e in zip(rss_warm, rss_end, strict=False)],
        "annotators_per_core": round(args.pace / cpu_per_pair, 1) if cpu_per_pair else None,
        "client_cpu_s": round(
            client_end.ru_utime
            + client_end.ru_stime
            - client_start.ru_utime
            - client_start.ru_stime,
            1,
        ),
        "load_avg": [round(x, 2) for x in load],
        "cores": os.cpu_count(),
        "server_cpu_s": round(server_cpu, 1) if replicas else None,
        "db_cpu_s": None if db_cpu is None else round(db_cpu, 1),
        "faults": dict(stats.faults),
        "longest_stall_s": round(max(outside), 2) if outside else None,
        "step_p95_outside_faults": percentile(
            outside_faults(stats.step_spans, stats.fault_windows), 0.95
        ),
        "stayed_idle": sum(1 for name in stayed if stats.last_page.get(name, 0.0) <= last_fault)
        if stats.fault_windows
        else None,
        "vanished_pair_release_s_max": None
        if not vanished_ids
        else (None if never else round(max(released[a] for a in vanished_ids), 1)),
    }
    assert tuple(result) == KEYS, "the JSON line's keys and KEYS differ"
    for error in stats.errors[:10]:
        print(error, file=sys.stderr)
    print(json.dumps(result), flush=True)
    if never:
        print(
            f"{len(never)} vanished annotators' pairs were still held at the end", file=sys.stderr
        )
    return 0 if not (stats.errors or checks["lost"] or checks["duplicated"]) else 1


if __name__ == "__main__":
    sys.exit(main())
