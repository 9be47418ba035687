"""A real MCP client (the official Python SDK, pinned in scripts/requirements/mcp.txt) driving
brainscan's MCP server. tests/e2e/mcp.rs runs it and asserts on the JSON it prints.

    mcp_client.py http BASE_URL KEY OTHER_KEY VIDEO_URL AUDIO_URL   # Streamable HTTP at BASE_URL/mcp
    mcp_client.py stdio BRAINSCAN_BIN BASE_URL KEY       # `brainscan mcp` as a subprocess

Every step records what the server answered; nothing is asserted here, so a failure shows the
whole exchange.
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp import MCPError


def tool_reply(result):
    return {
        "is_error": bool(result.is_error),
        "structured": result.structured_content,
        "text": "".join(getattr(c, "text", "") for c in result.content),
    }


async def call(session, name, args):
    try:
        return tool_reply(await session.call_tool(name, args))
    except MCPError as e:
        return {"mcp_error": {"code": e.error.code, "message": e.error.message, "data": e.error.data}}


async def read(session, uri):
    try:
        r = await session.read_resource(uri)
        c = r.contents[0]
        return {"mime": c.mime_type, "text": getattr(c, "text", None)}
    except MCPError as e:
        return {"mcp_error": {"code": e.error.code, "message": e.error.message, "data": e.error.data}}


def session_over_http(base, key):
    client = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(30, read=200)
    )
    return client, streamable_http_client(f"{base}/mcp", http_client=client)


async def http_run(base, key, other_key, video_url, audio_url):
    out = {}
    client, transport = session_over_http(base, key)
    async with client, transport as (read_stream, write_stream, *_):
        async with ClientSession(read_stream, write_stream) as s:
            init = await s.initialize()
            out["server"] = init.server_info.name
            out["instructions"] = init.instructions
            tools = (await s.list_tools()).tools
            out["tools"] = {
                t.name: {"input": t.input_schema, "output": t.output_schema} for t in tools
            }
            templates = (await s.list_resource_templates()).resource_templates
            out["templates"] = [t.uri_template for t in templates]
            out["wallet_before"] = await call(s, "get_wallet", {})
            a = await call(s, "create_scan", {"url": video_url, "lenses": ["attention", "memory"]})
            b = await call(s, "create_scan", {"url": audio_url, "modality": "audio"})
            out["created"] = [a, b]
            ids = [x["structured"]["scan_id"] for x in (a, b)]
            out["got"] = [await call(s, "get_scan", {"scan_id": i, "wait_seconds": 120}) for i in ids]
            out["got_again"] = await call(s, "get_scan", {"scan_id": ids[0]})
            # The second scan has the default lenses, manipulation among them.
            out["summary"] = await read(s, f"scan://{ids[1]}/summary")
            out["resource"] = await read(s, f"scan://{ids[0]}")
            out["compared"] = await call(s, "compare_scans", {"a": ids[0], "b": ids[1]})
            out["listed"] = await call(s, "list_scans", {"limit": 10})
            out["memory"] = await call(s, "search_memory", {"query": "a test pattern"})
            out["wallet_after"] = await call(s, "get_wallet", {})
            # Reading a result again is free (the REST API charges the first fetch only).
            await call(s, "get_scan", {"scan_id": ids[0]})
            await read(s, f"scan://{ids[1]}")
            out["wallet_final"] = await call(s, "get_wallet", {})
            out["bad_wait"] = await call(s, "get_scan", {"scan_id": ids[0], "wait_seconds": 500})
            out["unknown_argument"] = await call(s, "list_scans", {"limit": 5, "colour": "red"})
            out["bad_url"] = await call(s, "create_scan", {"url": "file:///etc/passwd"})
            out["ids"] = ids
    # Another organisation's key sees none of it.
    client, transport = session_over_http(base, other_key)
    async with client, transport as (read_stream, write_stream, *_):
        async with ClientSession(read_stream, write_stream) as s:
            await s.initialize()
            out["other_get"] = await call(s, "get_scan", {"scan_id": ids[0]})
            out["other_compare"] = await call(s, "compare_scans", {"a": ids[0], "b": ids[1]})
            out["other_resource"] = await read(s, f"scan://{ids[0]}/summary")
            out["other_list"] = await call(s, "list_scans", {})
    # No key, and a wrong key: the endpoint itself refuses (HTTP 401, the API's body).
    async with httpx2.AsyncClient() as raw:
        for label, headers in (("no_key", {}), ("wrong_key", {"Authorization": "Bearer sk_live_nope"})):
            r = await raw.post(
                f"{base}/mcp",
                headers={**headers, "Accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
            out[label] = {"status": r.status_code, "body": r.json()}
    return out


async def stdio_run(binary, base, key):
    out = {}
    params = StdioServerParameters(command=binary, args=["mcp", "--url", base, "--key", key])
    async with stdio_client(params) as (read_stream, write_stream):
        async with ClientSession(read_stream, write_stream) as s:
            init = await s.initialize()
            out["server"] = init.server_info.name
            out["tools"] = sorted(t.name for t in (await s.list_tools()).tools)
            out["wallet"] = await call(s, "get_wallet", {})
            out["listed"] = await call(s, "list_scans", {"limit": 3})
            out["missing"] = await call(s, "get_scan", {"scan_id": "scan_doesnotexist"})
    return out


def main():
    mode = sys.argv[1]
    if mode == "http":
        result = asyncio.run(http_run(*sys.argv[2:7]))
    else:
        result = asyncio.run(stdio_run(*sys.argv[2:5]))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
