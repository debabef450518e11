"""Per-client limits count a network prefix (annotate/people/clients.py): an IPv6 /64 is one
client, an IPv4 address is one client. A host with a /64 got the 16 page sockets and the 5 new
Prolific participants once per address it picked."""

from __future__ import annotations

import asyncio

import pytest

from annotate.engine import get_engine
from annotate.errors import UserError
from annotate.people.clients import client_key
from annotate.people.prolific import NEW_ACCOUNTS, NEW_PER_CLIENT, enter
from annotate.web import guard
from tests.factories import make_study


def test_an_address_maps_to_its_network_prefix():
    assert client_key("2001:db8:1:2::a") == client_key("2001:db8:1:2:ffff:1:2:3")
    assert client_key("2001:db8:1:2::a") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::a") != client_key("2001:db8:1:2::a")
    assert client_key("fe80::1%eth0") == "fe80::/64"
    assert client_key("203.0.113.9") == "203.0.113.9/32" != client_key("203.0.113.10")
    assert client_key("::ffff:203.0.113.9") == client_key("203.0.113.9")
    for nothing in (None, ""):
        assert client_key(nothing) == "unknown"
    assert client_key("testclient") == "testclient"  # not an address: counted as itself


def test_two_addresses_in_one_64_share_the_new_participant_limit(db_url, tmp_path):
    engine = get_engine(db_url)
    make_study(engine, tmp_path, n_pairs=3, allow_prolific=True, prolific_study_id="PSTUDY")
    NEW_ACCOUNTS.clear()
    try:
        addresses = [f"2001:db8:7:7::{n:x}" for n in range(1, 2 * NEW_PER_CLIENT + 1)]
        created = 0
        for n, address in enumerate(addresses):
            try:
                enter(engine, pid=f"p{n}", study_id="PSTUDY", session_id=f"s{n}", client=address)
                created += 1
            except UserError:
                pass
        assert created == NEW_PER_CLIENT
        # another /64 is another client
        enter(engine, pid="other", study_id="PSTUDY", session_id="s", client="2001:db8:7:8::1")
    finally:
        NEW_ACCOUNTS.clear()


def test_two_addresses_in_one_64_share_the_socket_limit(monkeypatch):
    monkeypatch.setattr(guard, "_sockets", {})
    release = asyncio.Event()

    async def page(scope, receive, send):  # a Streamlit session: held until released
        await receive()
        await send({"type": "websocket.accept"})
        await release.wait()

    app = guard.StreamlitEndpointGuard(page, get_engine=lambda: None, base_path=lambda: "")
    tasks: list[asyncio.Task] = []

    async def open_socket(address: str) -> list[dict]:
        sent: list[dict] = []

        async def receive():
            return {"type": "websocket.connect"}

        async def send(message):
            sent.append(message)

        scope = {"type": "websocket", "path": "/_stcore/stream", "client": (address, 1234)}
        tasks.append(asyncio.ensure_future(app(scope, receive, send)))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return sent

    async def run() -> tuple[list[dict], list[dict]]:
        for n in range(guard.MAX_SOCKETS_PER_CLIENT):
            assert (await open_socket(f"2001:db8:5:5::{n + 1:x}")) == [{"type": "websocket.accept"}]
        same_64 = await open_socket("2001:db8:5:5::ffff")
        other_64 = await open_socket("2001:db8:5:6::1")
        release.set()
        await asyncio.gather(*tasks)
        return same_64, other_64

    same_64, other_64 = asyncio.run(run())
    assert same_64 == [{"type": "websocket.close", "code": guard.POLICY_VIOLATION}]
    assert other_64 == [{"type": "websocket.accept"}]
    assert guard._sockets == {}


@pytest.fixture(autouse=True)
def _no_limits_left_behind():
    yield
    NEW_ACCOUNTS.clear()
