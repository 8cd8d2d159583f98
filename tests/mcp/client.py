"""A real MCP client (the official Python SDK, `mcp` on PyPI, pinned in tests/mcp/requirements.txt) driving the
connector the way an editor's agent would: list the tools, observe, tap an element of the observation, observe the
effect. Run by tests/mcp.rs; prints one JSON document with what it saw, which the Rust test checks.

    client.py http URL KEY          Streamable HTTP straight to the connector's /mcp
    client.py stdio BINARY URL KEYFILE   the stdio bridge (`xagent-adb-connector mcp --url URL --api-key-file F`)
"""

import asyncio
import base64
import json
import sys

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

        obs = await session.call_tool("android_observe", {})
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


async def main():
    mode = sys.argv[1]
    if mode == "http":
        url, key = sys.argv[2], sys.argv[3]
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
            async with streamable_http_client(url, http_client=http) as streams:
                out = await drive(streams[0], streams[1])
    else:
        binary, url, keyfile = sys.argv[2], sys.argv[3], sys.argv[4]
        params = StdioServerParameters(command=binary, args=["mcp", "--url", url, "--api-key-file", keyfile])
        async with stdio_client(params) as streams:
            out = await drive(streams[0], streams[1])
    print(json.dumps(out))


asyncio.run(main())
