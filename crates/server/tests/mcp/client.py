"""A real MCP client (the official Python SDK, `pip install mcp`) against the Scriptorium server.

Usage: client.py SERVER MEMORY_ROOT --word WORD --topic PATH

Spawns `SERVER MEMORY_ROOT` as a stdio MCP server and checks the `memory_*` tools end to end:
initialize, tools/list (six tools, each with an input schema), memory_status, memory_search
(the recall fenced exactly once), memory_grep, memory_get, memory_browse, a path outside the
workspace (a tool error, not a protocol error), memory_update with the current revision, then
again with the now-stale one (CONCURRENT_UPDATE). Prints a JSON summary on stdout and exits
non-zero on the first failed check.
"""

import argparse
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TOOLS = {
    "memory_search",
    "memory_grep",
    "memory_get",
    "memory_browse",
    "memory_update",
    "memory_note",
    "memory_status",
}
FENCE_OPEN = "<memory-context>"
FENCE_CLOSE = "</memory-context>"
TIMEOUT_SECONDS = 120


class CheckFailed(Exception):
    """A failed assertion about the server's behaviour."""


def check(condition, what):
    if not condition:
        raise CheckFailed(what)


def text_of(result):
    check(len(result.content) == 1, f"one content block, got {result.content!r}")
    block = result.content[0]
    check(block.type == "text", f"text content, got {block!r}")
    return block.text


def ok_text(result, tool):
    text = text_of(result)
    check(not result.is_error, f"{tool} failed: {text}")
    return text


def ok_json(result, tool):
    return json.loads(ok_text(result, tool))


def refusal(result, tool):
    text = text_of(result)
    check(result.is_error, f"{tool} should be refused, got {text}")
    value = json.loads(text)
    check(value.get("ok") is False, f"{tool} refusal has ok false: {value}")
    error = value.get("error") or {}
    check(
        isinstance(error.get("code"), str) and isinstance(error.get("message"), str)
        and "path" in error,
        f"{tool} refusal has code, message and path: {value}",
    )
    return error


def note(topic_path, sentence):
    content = (
        f"# Note\n\n{sentence}[^e1]\n\n"
        "[^e1]: Time: `2024-05`; Sources: [note](new-source-note)\n"
    )
    return {
        "changes": [{"path": topic_path, "action": "write", "content": content}],
        "sources": [{"label": "new-source-note", "role": "user", "content": sentence}],
        "commit_message": "a note from the MCP client test",
    }


async def exercise(server, root, word, topic, summary):
    params = StdioServerParameters(command=server, args=[root])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            summary["server"] = init.server_info.name
            check(init.server_info.name == "scriptorium", f"server name: {init.server_info}")
            check(init.capabilities.tools is not None, "the server offers tools")
            check(bool(init.instructions), "the server gives instructions")

            listed = (await session.list_tools()).tools
            names = {tool.name for tool in listed}
            summary["tools"] = sorted(names)
            check(TOOLS <= names, f"the seven memory tools are listed: {sorted(names)}")
            for tool in listed:
                schema = tool.input_schema
                check(
                    isinstance(schema, dict) and schema.get("type") == "object",
                    f"{tool.name} has an object input schema: {schema}",
                )
                check(bool(tool.description), f"{tool.name} has a description")
            schemas = {tool.name: tool.input_schema for tool in listed}
            check("base_revision" in schemas["memory_update"].get("required", []),
                  "memory_update requires base_revision")
            check("query" in schemas["memory_search"].get("properties", {}),
                  "memory_search takes a query")

            status = ok_json(await session.call_tool("memory_status", {}), "memory_status")
            base = status["revision"]
            check(isinstance(base, str) and base, f"status has a revision: {status}")
            check(status["topic_files"] >= 1 and status["blocks"] >= 1, f"counts: {status}")
            summary["revision_before"] = base

            recall = ok_text(
                await session.call_tool("memory_search", {"query": word, "top_k": 5}),
                "memory_search",
            )
            check(recall.count(FENCE_OPEN) == 1 and recall.count(FENCE_CLOSE) == 1,
                  f"the recall is fenced exactly once: {recall}")
            inner = recall.split(FENCE_OPEN, 1)[1].split(FENCE_CLOSE, 1)[0]
            check(word in inner, f"{word!r} is recalled inside the fence: {recall}")
            check(f"link: {topic}#^" in inner, f"the hit links {topic}: {recall}")

            grep = ok_text(await session.call_tool("memory_grep", {"query": word}), "memory_grep")
            check(any(line.startswith(f"{topic}:") for line in grep.splitlines()),
                  f"grep finds {word!r} in {topic}: {grep}")

            whole = ok_text(await session.call_tool("memory_get", {"path": topic}), "memory_get")
            check(word in whole and whole.startswith("# "), f"get reads {topic}: {whole}")

            files = ok_text(await session.call_tool("memory_browse", {"prefix": "topics"}),
                            "memory_browse")
            check(any(line.startswith(f"{topic} ") for line in files.splitlines()),
                  f"browse lists {topic}: {files}")

            outside = refusal(await session.call_tool("memory_get", {"path": "../x"}),
                              "memory_get ../x")
            check(outside["code"] == "PATH_OUTSIDE_WORKSPACE", f"outside: {outside}")

            first = dict(note("topics/mcp-client.md", "Dana bought a red wheelbarrow."),
                         base_revision=base)
            done = ok_json(await session.call_tool("memory_update", first), "memory_update")
            check(done.get("ok") is True, f"the update installs: {done}")
            check(done["revision"] != base, f"the revision moves: {done}")
            check("topics/mcp-client.md" in done["changed_files"], f"changed files: {done}")
            check(done["memory_committed"] is True, f"memory committed: {done}")
            summary["revision_after"] = done["revision"]
            summary["git_committed"] = done["git_committed"]

            again = dict(note("topics/mcp-stale.md", "Dana sold the wheelbarrow."),
                         base_revision=base)
            stale = refusal(await session.call_tool("memory_update", again), "stale memory_update")
            check(stale["code"] == "CONCURRENT_UPDATE", f"a stale base is refused: {stale}")

            status = ok_json(await session.call_tool("memory_status", {}), "memory_status")
            check(status["revision"] == done["revision"], f"the stale update changed nothing: {status}")

            noted = ok_json(await session.call_tool(
                "memory_note", {"text": "Dana's wheelbarrow is green now."}), "memory_note")
            check(noted.get("ok") is True and "topics/notes.md" in noted["changed_files"],
                  f"the note installs: {noted}")
            bad = refusal(await session.call_tool("memory_note", {"text": "x", "time": "2024-13"}),
                          "memory_note with a bad time")
            check(bad["code"] == "INVALID_ARGUMENT", f"a bad note is refused: {bad}")
            summary["revision_after"] = noted["revision"]

            # A citation leads to the record it cites, with its place in the conversation.
            notes = ok_text(await session.call_tool("memory_get", {"path": "topics/notes.md"}),
                            "memory_get notes")
            link = next((part.split(")")[0] for part in notes.split("](")[1:]
                         if "#source-" in part.split(")")[0]), None)
            check(link is not None, f"the note cites its record: {notes}")
            record = ok_text(await session.call_tool("memory_get", {"path": link}),
                             "memory_get of a citation")
            check("wheelbarrow is green" in record and "turn 1 of" in record,
                  f"the citation opens its record: {record}")
            check("cited by: topics/notes.md" in record, f"the record names its citer: {record}")

            # The core, as a resource and as a prompt, holds what a core note pinned.
            pinned = ok_json(await session.call_tool(
                "memory_note", {"text": "Dana prefers short answers.", "core": True}),
                "memory_note --core")
            check(pinned.get("ok") is True, f"the core note installs: {pinned}")
            resources = (await session.list_resources()).resources
            check([str(r.uri) for r in resources] == ["memory://core"],
                  f"the core is the one resource: {resources}")
            read = await session.read_resource("memory://core")
            core = read.contents[0].text
            check(core.count(FENCE_OPEN) == 1 and "Dana prefers short answers." in core,
                  f"the core resource holds the fenced core: {core}")
            prompts = (await session.list_prompts()).prompts
            check([p.name for p in prompts] == ["memory_core"], f"the core prompt: {prompts}")
            prompt = await session.get_prompt("memory_core")
            check(prompt.messages[0].content.text == core, f"the prompt is the core: {prompt}")
            try:
                await session.read_resource("memory://nothing")
                check(False, "an unknown resource is refused")
            except CheckFailed:
                raise
            except Exception as error:  # noqa: BLE001 - the SDK raises McpError
                check("no such resource" in str(error), f"the refusal says why: {error}")
            summary["resources"] = [str(r.uri) for r in resources]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("server")
    parser.add_argument("root")
    parser.add_argument("--word", required=True)
    parser.add_argument("--topic", required=True)
    args = parser.parse_args()
    summary = {"ok": False}
    try:
        asyncio.run(asyncio.wait_for(
            exercise(args.server, args.root, args.word, args.topic, summary), TIMEOUT_SECONDS))
        summary["ok"] = True
    except CheckFailed as failed:
        summary["failed"] = str(failed)
    except Exception as error:  # noqa: BLE001 - report any client or transport failure
        summary["failed"] = f"{type(error).__name__}: {error!r}"
    print(json.dumps(summary, indent=2, sort_keys=True))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
