"""A scripted agent doing tasks in the demo world (issue 50 item 4) through `/mcp` with the official MCP Python SDK:
it decides from what the tools return — elements found by their text in an observation, never coordinates written
here — as a model would. Run by tests/demo_world.rs; prints one JSON document with what it saw, which the Rust test
checks.

    world.py http URL KEY TASK      TASK: settings | article | otp | lock
"""

import asyncio
import json
import re
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


class Agent:
    def __init__(self, session):
        self.s = session
        self.log = []

    async def call(self, name, args=None, ok=True):
        r = await self.s.call_tool(name, args or {})
        text = "".join(c.text for c in r.content if c.type == "text")
        self.log.append({"tool": name, "args": args or {}, "is_error": r.is_error, "text": text[:300]})
        if ok and r.is_error:
            raise RuntimeError(f"{name} {args}: {text}")
        return r.structured_content if not r.is_error else {"error": text}

    async def observe(self):
        return await self.call("android_observe", {"max_side": 320})

    @staticmethod
    def find(obs, text=None, contains=None, **fields):
        """The first element whose text (or content description) is `text` / contains `contains`, and whose other
        fields match."""
        for e in obs.get("elements", []):
            label = e.get("text") or e.get("content_desc") or ""
            if text is not None and label != text:
                continue
            if contains is not None and contains not in label:
                continue
            if all(e.get(k) == v for k, v in fields.items()):
                return e
        return None

    @staticmethod
    def texts(obs):
        return [e.get("text") or e.get("content_desc") or "" for e in obs.get("elements", [])]

    async def tap(self, obs, element):
        return await self.call(
            "android_tap", {"element": {"index": element["index"], "observation_id": obs["observation_id"]}}
        )

    async def tap_text(self, text, **fields):
        obs = await self.observe()
        e = self.find(obs, text=text, **fields)
        if e is None:
            raise RuntimeError(f"no {text!r} on screen: {self.texts(obs)}")
        return await self.tap(obs, e)

    @staticmethod
    def value_after(obs, title):
        """A settings row's summary: the element after its title."""
        els = obs.get("elements", [])
        for i, e in enumerate(els):
            if e.get("text") == title and i + 1 < len(els):
                return els[i + 1].get("text")
        return None


async def settings(a, out):
    await a.call("android_key", {"key": "HOME"})
    await a.call("android_app_launch", {"package": "com.android.settings"})
    await a.tap_text("Network & internet")
    obs = await a.observe()
    out["network_page"] = a.texts(obs)
    await a.tap_text("Internet")
    obs = await a.observe()
    out["internet_page"] = a.texts(obs)
    switch = next((e for e in obs["elements"] if e.get("class", "").endswith("Switch")), None)
    out["wifi_switch"] = switch
    out["connected"] = a.value_after(obs, "SimWifi")
    # BACK twice: Network & internet, then the Settings list.
    await a.call("android_key", {"key": "BACK"})
    out["after_back"] = a.texts(await a.observe())
    await a.call("android_key", {"key": "BACK"})
    out["after_back_2"] = a.texts(await a.observe())
    # About phone is below the screen: scroll until it shows, then open it and read its rows.
    await a.call("android_scroll", {"direction": "down", "until": {"text": "About phone"}})
    await a.tap_text("About phone")
    obs = await a.observe()
    out["about"] = {k: a.value_after(obs, k) for k in ["Model", "Android version", "Build number"]}
    up = a.find(obs, text="Navigate up")
    await a.tap(obs, up)
    out["after_up"] = a.texts(await a.observe())


async def article(a, out):
    await a.call("android_open_url", {"url": "https://sim.example/start"})
    obs = await a.observe()
    out["start_title"] = obs.get("web", {}).get("title")
    news = a.find(obs, text="Today's news", source="web")
    await a.tap(obs, news)
    obs = await a.observe()
    out["news_url"] = obs.get("web", {}).get("url")
    links = [e for e in obs["elements"] if e.get("source") == "web" and e.get("class") == "a"]
    out["news_links"] = [e["text"] for e in links]
    first = next(e for e in links if not e["text"].startswith("Back"))
    out["picked"] = first["text"]
    await a.tap(obs, first)
    obs = await a.observe()
    out["article_title"] = obs.get("web", {}).get("title")
    heading = next((e for e in obs["elements"] if e.get("source") == "web" and e.get("class") == "text"), None)
    out["article_heading"] = heading and heading["text"]
    out["article_url"] = obs.get("web", {}).get("url")
    await a.call("android_key", {"key": "BACK"})
    obs = await a.observe()
    out["back_url"] = obs.get("web", {}).get("url")
    await a.call("android_open_url", {"url": "https://nowhere.invalid/page"})
    obs = await a.observe()
    out["error_page"] = [e.get("text") for e in obs["elements"] if e.get("source") == "web"]


async def otp(a, out):
    await a.call("android_open_url", {"url": "https://sim.example/login"})
    obs = await a.observe()
    user = a.find(obs, resource_id="username")
    await a.call("android_input_text", {"element": {"index": user["index"], "observation_id": obs["observation_id"]},
                                        "text": "alice"})
    obs = await a.observe()
    pw = a.find(obs, resource_id="password")
    await a.call("android_input_text", {"element": {"index": pw["index"], "observation_id": obs["observation_id"]},
                                        "text": "correct-horse"})
    before = await a.call("android_notifications", {})
    since = before.get("latest_ms") or 0
    await a.tap_text("Send code", source="web")
    # The code comes by SMS a few seconds later: read the notifications until it is there.
    code = None
    for _ in range(60):
        got = await a.call("android_notifications", {"since_ms": since} if since else {})
        for n in got["notifications"]:
            m = re.search(r"\b(\d{6})\b", n.get("text") or "")
            if m and "code" in (n.get("text") or ""):
                code = m.group(1)
                out["notification"] = n
        if code:
            break
        await asyncio.sleep(1)
    out["code"] = code
    obs = await a.observe()
    field = a.find(obs, resource_id="code")
    await a.call("android_input_text", {"element": {"index": field["index"], "observation_id": obs["observation_id"]},
                                        "text": code})
    await a.tap_text("Sign in", source="web", **{"class": "button"})
    obs = await a.observe()
    out["signed_in"] = [e.get("text") for e in obs["elements"] if e.get("source") == "web"]
    out["signed_in_url"] = obs.get("web", {}).get("url")
    # The same code in the shade (a swipe down from the top edge) and in the Messages app.
    st = await a.call("android_device_status", {})
    w, h = st["screen_width"], st["screen_height"]
    await a.call("android_swipe", {"x1": w // 2, "y1": 2, "x2": w // 2, "y2": h * 6 // 10})
    obs = await a.observe()
    out["shade"] = a.texts(obs)
    await a.call("android_key", {"key": "BACK"})
    await a.call("android_app_launch", {"package": "com.google.android.apps.messaging"})
    obs = await a.observe()
    out["messages"] = a.texts(obs)
    sender = a.find(obs, text=out["notification"]["title"])
    await a.tap(obs, sender)
    out["conversation"] = a.texts(await a.observe())


async def lock(a, out):
    await a.call("android_key", {"key": "HOME"})
    await a.call("android_key", {"key": "POWER"})
    out["after_power"] = await a.call("android_device_status", {})
    await a.call("android_wake", {})
    out["after_wake"] = await a.call("android_device_status", {})
    obs = await a.observe()
    out["lock_screen"] = a.texts(obs)
    out["locked_seen"] = obs.get("locked")
    unlock = await a.call("android_unlock", {}, ok=False)
    out["unlock"] = unlock
    if "secure_lock" in unlock.get("error", ""):
        # The connector never types credentials: ask a person (the demo's guide prints the PIN for them).
        out["human"] = await a.call(
            "android_request_human",
            {"reason": "The phone is locked with a PIN", "instructions": "Unlock it with the PIN from the demo guide",
             "timeout_s": 120},
        )
    out["after_unlock"] = await a.call("android_device_status", {})
    out["home"] = a.texts(await a.observe())


TASKS = {"settings": settings, "article": article, "otp": otp, "lock": lock}


async def drive(read, write, task):
    out = {}
    async with ClientSession(read, write) as session:
        await session.initialize()
        a = Agent(session)
        listed = await a.call("list_devices")
        await a.call("select_device", {"serial": listed["devices"][0]["serial"]})
        try:
            await TASKS[task](a, out)
            out["ok"] = True
        except Exception as e:  # reported to the Rust test with the calls made
            out["ok"] = False
            out["failure"] = repr(e)
        out["calls"] = a.log
        await a.call("release_device", ok=False)
    return out


async def main():
    url, key, task = sys.argv[2], sys.argv[3], sys.argv[4]
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            out = await drive(streams[0], streams[1], task)
    print(json.dumps(out))


asyncio.run(main())
