"""What an MCP host reads before and around its tool calls, through the official Python SDK (`mcp`, pinned in
tests/mcp/requirements.txt): the instructions, the manual as a resource and a prompt, each tool's annotations, and
the device tools (list_devices, select_device, release_device), a batch and a rotation. Run by tests/mcp_agent.rs; prints one JSON
document with what it saw, which the Rust test checks.

    agent.py http URL KEY
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def text_of(result):
    return "".join(c.text for c in result.content if c.type == "text")


def tool_result(r):
    return {"is_error": r.is_error, "text": text_of(r), "structured": r.structured_content}


async def drive(read, write):
    out = {}
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        out["instructions"] = init.instructions
        caps = init.capabilities
        out["capabilities"] = {"resources": caps.resources is not None, "prompts": caps.prompts is not None}

        resources = await session.list_resources()
        out["resources"] = [{"uri": str(r.uri), "mime": r.mime_type, "size": r.size} for r in resources.resources]
        read_back = await session.read_resource(str(resources.resources[0].uri))
        out["resource_text"] = read_back.contents[0].text

        prompts = await session.list_prompts()
        out["prompts"] = [{"name": p.name, "arguments": [a.name for a in (p.arguments or [])]} for p in prompts.prompts]
        prompt = await session.get_prompt(prompts.prompts[0].name, {"task": "Make the counter show 3."})
        out["prompt_messages"] = [{"role": m.role, "text": m.content.text} for m in prompt.messages]

        listed = await session.list_tools()
        out["annotations"] = {
            t.name: None if t.annotations is None else {
                "readOnlyHint": t.annotations.read_only_hint,
                "destructiveHint": t.annotations.destructive_hint,
                "idempotentHint": t.annotations.idempotent_hint,
                "openWorldHint": t.annotations.open_world_hint,
            }
            for t in listed.tools
        }

        out["list_before"] = tool_result(await session.call_tool("list_devices", {}))
        serial = out["list_before"]["structured"]["devices"][0]["serial"]
        selected = await session.call_tool("select_device", {"serial": serial})
        out["select"] = tool_result(selected)
        out["select_bytes"] = len(text_of(selected).encode())
        out["list_held"] = tool_result(await session.call_tool("list_devices", {}))
        out["release"] = tool_result(await session.call_tool("release_device", {}))
        out["list_after"] = tool_result(await session.call_tool("list_devices", {}))
        out["release_again"] = tool_result(await session.call_tool("release_device", {}))
        out["unknown"] = tool_result(await session.call_tool("android_teleport", {}))

        # Issue 49 items 5 and 6: one batch of three taps (the first tool call binds a free phone), a rotation.
        tap = {"tool_id": "android_tap", "arguments": {"element": {"text": "Increment"}}}
        out["batch"] = tool_result(await session.call_tool("android_batch", {"steps": [tap, tap, tap]}))
        out["rotate"] = tool_result(await session.call_tool("android_rotate", {"orientation": "landscape"}))
        out["rotate_bad"] = tool_result(await session.call_tool("android_rotate", {"orientation": "sideways"}))
    return out


async def main():
    url, key = sys.argv[2], sys.argv[3]
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            out = await drive(streams[0], streams[1])
    print(json.dumps(out))


asyncio.run(main())
