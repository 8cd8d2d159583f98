"""A real MCP client (the official Python SDK, `mcp` on PyPI, pinned in tests/mcp/requirements.txt) driving the
connector the way an editor's agent would: list the tools, observe, tap an element of the observation, observe the
effect. Run by tests/mcp.rs; prints one JSON document with what it saw, which the Rust test checks.

    client.py SCENARIO http URL KEY          Streamable HTTP straight to the connector's /mcp
    client.py SCENARIO stdio BINARY URL KEYFILE   the stdio bridge (`xagent-adb-connector mcp --url URL --api-key-file F`)

SCENARIO is `round` (the above), `progress` (a wait for a text that a tap makes appear 3 s later, with a progress
callback) or `cancel` (two taps the phone holds, cancelled by the client: one with a progress callback, so its answer
is an event stream, one without; then a call that must work).
"""

import asyncio
import base64
import json
import sys
import time

import anyio

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def text_of(result):
    return "".join(c.text for c in result.content if c.type == "text")


async def drive(read, write):
    out = {}
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        out["server"] = init.server_info.name
        listed = await session.list_tools()
        out["tools"] = [t.name for t in listed.tools]

        lean = await session.call_tool("android_observe", {})
        out["lean_images"] = len([c for c in lean.content if c.type == "image"])
        out["lean_text"] = text_of(lean)
        obs = await session.call_tool("android_observe", {"picture": True})
        out["observe_error"] = obs.is_error
        images = [c for c in obs.content if c.type == "image"]
        out["images"] = [{"mime": c.mime_type, "bytes": len(base64.b64decode(c.data))} for c in images]
        out["jpeg"] = bool(images) and base64.b64decode(images[0].data)[:3] == b"\xff\xd8\xff"
        o = obs.structured_content
        button = next(e for e in o["elements"] if e.get("text") == "Increment")
        tap = await session.call_tool(
            "android_tap",
            # The longest settle wait: on a loaded test box the phone's frames come slowly.
            {"element": {"index": button["index"], "observation_id": o["observation_id"]}, "settle_timeout_ms": 10000},
        )
        out["tap_error"] = tap.is_error
        out["tap"] = tap.structured_content
        after = await session.call_tool("android_observe", {"marks": False})
        out["texts_after"] = [e.get("text") for e in after.structured_content["elements"] if e.get("text")]

        bad = await session.call_tool("android_tap", {"x": "left"})
        out["bad"] = {"is_error": bad.is_error, "text": text_of(bad), "structured": bad.structured_content}
    return out


async def drive_progress(read, write):
    """A wait that lasts: `Count: 1` appears only when this client taps Increment, 3 s after the wait began."""
    out = {"notes": []}
    started = time.monotonic()

    async def note(progress, total, message):
        out["notes"].append({"progress": progress, "total": total, "message": message,
                             "at_ms": int((time.monotonic() - started) * 1000)})

    async with ClientSession(read, write) as session:
        await session.initialize()
        obs = await session.call_tool("android_observe", {"marks": False})
        o = obs.structured_content
        button = next(e for e in o["elements"] if e.get("text") == "Increment")
        done = {}

        async def wait():
            r = await session.call_tool("android_ui_wait", {"text": "Count: 1", "timeout_ms": 30000},
                                        progress_callback=note)
            done["notes_before_result"] = len(out["notes"])
            done["result"] = r

        async with anyio.create_task_group() as tg:
            started = time.monotonic()
            tg.start_soon(wait)
            await anyio.sleep(3)
            out["tapped_at_ms"] = int((time.monotonic() - started) * 1000)
            tap = await session.call_tool(
                "android_tap",
                {"element": {"index": button["index"], "observation_id": o["observation_id"]}, "settle": False})
            out["tap_error"] = tap.is_error
        r = done["result"]
        out["wait_error"] = r.is_error
        out["wait"] = r.structured_content
        out["notes_before_result"] = done["notes_before_result"]
    return out


async def drive_cancel(read, write):
    """Two taps the phone holds (the test stalls `input`), each given up by the client after 2 s: the SDK sends
    `notifications/cancelled`. Then a call that must work."""
    out = {}
    notes = []

    async def note(progress, total, message):
        notes.append(message)

    async with ClientSession(read, write) as session:
        await session.initialize()
        first = await session.call_tool("android_device_status", {})
        out["status_error"] = first.is_error
        for name, cb in (("streamed", note), ("plain", None)):
            answered = None
            with anyio.move_on_after(2):
                answered = await session.call_tool("android_tap", {"x": 10, "y": 10, "settle": False},
                                                   progress_callback=cb)
            out[name] = "answered" if answered is not None else "cancelled"
            # The cancel notification is on its way: give the connector a moment before the next request.
            await anyio.sleep(1)
        out["notes"] = len(notes)
        after = await session.call_tool("android_device_status", {})
        out["after_error"] = after.is_error
        out["after"] = after.structured_content
    return out


async def main():
    scenario, mode = sys.argv[1], sys.argv[2]
    drive_fn = {"round": drive, "progress": drive_progress, "cancel": drive_cancel}[scenario]
    if mode == "http":
        url, key = sys.argv[3], sys.argv[4]
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                out = await drive_fn(streams[0], streams[1])
    else:
        binary, url, keyfile = sys.argv[3], sys.argv[4], sys.argv[5]
        params = StdioServerParameters(command=binary, args=["mcp", "--url", url, "--api-key-file", keyfile])
        async with stdio_client(params) as streams:
            out = await drive_fn(streams[0], streams[1])
    print(json.dumps(out))


asyncio.run(main())
