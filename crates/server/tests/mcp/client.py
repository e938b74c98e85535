"""A real MCP client (the official Python SDK, `pip install mcp`) against the Scriptorium server.

Usage: client.py SERVER MEMORY_ROOT --word WORD --topic PATH

Spawns `SERVER MEMORY_ROOT` as a stdio MCP server and checks the `memory_*` tools end to end,
as a model meets them:
- tools/list: eight tools, each declaring an input and an output schema that are valid JSON
  Schemas (checked against their meta-schema with `jsonschema`) and open nowhere (no `true`,
  `{}` or untyped item schema);
- every call the test makes is first checked against the tool's declared input schema, and every
  successful answer's structured content is validated against its declared output schema;
- each tool called with arguments its input schema rejects is refused by the server as a tool
  error (never a protocol error) with the stable code INVALID_ARGUMENT, and changes nothing;
- memory_status, memory_search (the recall fenced exactly once; a record's speaker by name),
  memory_grep, memory_get, memory_browse, a path outside the workspace, memory_update in each of
  its forms with the current revision, then with the now-stale one (CONCURRENT_UPDATE),
  memory_note, a citation followed to its record, the core as a resource and a prompt, and
  memory_forget (marked destructive) of that record: its plan changes nothing, confirmed it
  leaves the note's text nowhere memory_grep looks.
Prints a JSON summary on stdout and exits non-zero on the first failed check.
"""

import argparse
import asyncio
import json
import sys

import jsonschema
from jsonschema.validators import validator_for
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
    "memory_forget",
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


def open_schemas(schema, at):
    """The places in `schema` where a model would have to guess: `true`, `{}`, untyped items."""
    found = []
    if schema is True:
        found.append(at)
    elif isinstance(schema, dict):
        if not schema:
            found.append(at)
        items = schema.get("items")
        if isinstance(items, dict) and not ({"type", "oneOf", "anyOf", "enum", "const"} & items.keys()):
            found.append(f"{at}/items")
        for key, child in schema.items():
            if key not in ("const", "enum", "default", "examples"):
                found.extend(open_schemas(child, f"{at}/{key}"))
    elif isinstance(schema, list):
        for i, child in enumerate(schema):
            found.extend(open_schemas(child, f"{at}/{i}"))
    return found


def validator(schema, what):
    """A validator of `schema` (its own draft, by `$schema`), after checking the schema itself
    against that draft's meta-schema."""
    cls = validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise CheckFailed(f"{what} is not a valid JSON Schema: {error.message}") from error
    check(not open_schemas(schema, what), f"{what} is open at {open_schemas(schema, what)}")
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


class Tools:
    """The session's tools as a model sees them: every call is checked against the declared
    input schema first, and every answer against the declared output schema."""

    def __init__(self, session, listed):
        self.session = session
        self.inputs = {t.name: validator(t.input_schema, f"{t.name} input") for t in listed}
        self.outputs = {}
        for tool in listed:
            check(tool.output_schema is not None, f"{tool.name} declares an output schema")
            self.outputs[tool.name] = validator(tool.output_schema, f"{tool.name} output")
        self.calls = 0
        self.refusals = 0

    async def call(self, tool, arguments):
        """A call a model can form from tools/list: valid by the input schema; a success must
        carry structured content valid by the output schema."""
        errors = [e.message for e in self.inputs[tool].iter_errors(arguments)]
        check(not errors, f"{tool} {arguments}: the declared input schema refuses it: {errors}")
        result = await self.session.call_tool(tool, arguments)
        self.calls += 1
        if not result.is_error:
            check(result.structured_content is not None, f"{tool} answers structured content")
            errors = [e.message for e in self.outputs[tool].iter_errors(result.structured_content)]
            check(not errors, f"{tool}: the answer breaks the output schema: {errors}")
        return result

    async def invalid(self, tool, arguments):
        """A call the declared input schema rejects: the server refuses it as a tool error with
        INVALID_ARGUMENT (the schema and the server agree)."""
        check(not self.inputs[tool].is_valid(arguments),
              f"{tool} {arguments}: the input schema should reject this")
        result = await self.session.call_tool(tool, arguments)
        error = refusal(result, f"{tool} {arguments}")
        check(error["code"] == "INVALID_ARGUMENT", f"{tool} {arguments}: {error}")
        check(result.structured_content is None, f"{tool}: a refusal has no structured content")
        self.refusals += 1
        return error


def invalid_calls(schemas, base):
    """For each tool, argument sets its declared input schema rejects (bounds read from it)."""
    top_k = schemas["memory_search"]["properties"]["top_k"]
    limit = schemas["memory_get"]["properties"]["limit"]
    return {
        "memory_search": [{}, {"query": ""}, {"query": "x", "top_k": "many"},
                          {"query": "x", "top_k": top_k["minimum"] - 1},
                          {"query": "x", "top_k": top_k["maximum"] + 1},
                          {"query": "x", "topics_only": "yes"}, {"query": "x", "mood": "curious"}],
        "memory_grep": [{}, {"query": ""}, {"query": "x", "case_sensitive": "yes"},
                        {"query": 7}],
        "memory_get": [{}, {"path": ""}, {"path": "core.md", "limit": limit["minimum"] - 1},
                       {"path": "core.md", "limit": limit["maximum"] + 1},
                       {"path": "core.md", "offset": -1}, {"path": "core.md", "extra": 1}],
        "memory_browse": [{"prefix": 3}, {"depth": 2}],
        "memory_status": [{"verbose": True}],
        "memory_forget": [{}, {"confirm": True}, {"session": []}, {"session": ""},
                          {"session": 7}, {"block": ["x", 3]}, {"matching": "abc"},
                          {"block": "x", "confirm": "yes"}, {"block": "x", "everywhere": True}],
        "memory_note": [{}, {"text": ""}, {"text": "x", "time": "May"},
                        {"text": "x", "core": "yes"}, {"text": "x", "tags": ["a"]}],
        "memory_update": [
            {"memory_changes": [{"op": "delete_record", "block_id": "1a2b3c4d"}]},
            {"base_revision": base},
            {"base_revision": base, "memory_changes": []},
            {"base_revision": base, "memory_changes": [{"op": "explode"}]},
            {"base_revision": base,
             "memory_changes": [{"op": "create_record", "time": "2024-05"}]},
            {"base_revision": base, "changes": [{"path": "topics/x.md", "action": "rename"}]},
            {"base_revision": base, "patch": "", },
            {"base_revision": base, "patch": "--- a\n+++ b\n",
             "changes": [{"path": "topics/x.md", "action": "delete"}]},
        ],
    }


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
            check(TOOLS == names, f"the eight memory tools are listed: {sorted(names)}")
            for tool in listed:
                schema = tool.input_schema
                check(
                    isinstance(schema, dict) and schema.get("type") == "object",
                    f"{tool.name} has an object input schema: {schema}",
                )
                check(bool(tool.description), f"{tool.name} has a description")
            tools = Tools(session, listed)
            schemas = {tool.name: tool.input_schema for tool in listed}
            check("base_revision" in schemas["memory_update"].get("required", []),
                  "memory_update requires base_revision")
            check("query" in schemas["memory_search"].get("properties", {}),
                  "memory_search takes a query")

            status = ok_json(await tools.call("memory_status", {}), "memory_status")
            base = status["revision"]
            check(isinstance(base, str) and base, f"status has a revision: {status}")
            check(status["topic_files"] >= 1 and status["blocks"] >= 1, f"counts: {status}")
            summary["revision_before"] = base

            # Arguments the declared schemas reject are refused by the server too, and
            # change nothing.
            for tool, cases in invalid_calls(schemas, base).items():
                for arguments in cases:
                    await tools.invalid(tool, arguments)
            status = ok_json(await tools.call("memory_status", {}), "memory_status")
            check(status["revision"] == base, f"refused calls changed nothing: {status}")

            found = await tools.call("memory_search", {"query": word, "top_k": 5})
            recall = ok_text(found, "memory_search")
            check(recall.count(FENCE_OPEN) == 1 and recall.count(FENCE_CLOSE) == 1,
                  f"the recall is fenced exactly once: {recall}")
            inner = recall.split(FENCE_OPEN, 1)[1].split(FENCE_CLOSE, 1)[0]
            check(word in inner, f"{word!r} is recalled inside the fence: {recall}")
            check(f"link: {topic}#^" in inner, f"the hit links {topic}: {recall}")
            check(recall.startswith(found.structured_content["recall"]),
                  f"the structured recall is the text's: {found.structured_content}")

            grep = ok_text(await tools.call("memory_grep", {"query": word}), "memory_grep")
            check(any(line.startswith(f"{topic}:") for line in grep.splitlines()),
                  f"grep finds {word!r} in {topic}: {grep}")

            whole = ok_text(await tools.call("memory_get", {"path": topic}), "memory_get")
            check(word in whole and whole.startswith("# "), f"get reads {topic}: {whole}")

            files = ok_text(await tools.call("memory_browse", {"prefix": "topics"}),
                            "memory_browse")
            check(any(line.startswith(f"{topic} ") for line in files.splitlines()),
                  f"browse lists {topic}: {files}")

            outside = refusal(await tools.call("memory_get", {"path": "../x"}),
                              "memory_get ../x")
            check(outside["code"] == "PATH_OUTSIDE_WORKSPACE", f"outside: {outside}")

            first = dict(note("topics/mcp-client.md", "Dana bought a red wheelbarrow."),
                         base_revision=base)
            done = ok_json(await tools.call("memory_update", first), "memory_update")
            check(done.get("ok") is True, f"the update installs: {done}")
            check(done["revision"] != base, f"the revision moves: {done}")
            check("topics/mcp-client.md" in done["changed_files"], f"changed files: {done}")
            check(done["memory_committed"] is True, f"memory committed: {done}")
            summary["revision_after"] = done["revision"]
            summary["git_committed"] = done["git_committed"]

            again = dict(note("topics/mcp-stale.md", "Dana sold the wheelbarrow."),
                         base_revision=base)
            stale = refusal(await tools.call("memory_update", again), "stale memory_update")
            check(stale["code"] == "CONCURRENT_UPDATE", f"a stale base is refused: {stale}")

            status = ok_json(await tools.call("memory_status", {}), "memory_status")
            check(status["revision"] == done["revision"], f"the stale update changed nothing: {status}")

            # The record-operation form, formed from the schema's tagged operations.
            bees = {
                "base_revision": done["revision"],
                "memory_changes": [{
                    "op": "create_record", "content": "Dana keeps bees.", "time": "2024-05",
                    "sources": [{"source": "new-source-bees", "label": "chat"}],
                    "destination": {"topic_path": "topics/mcp-client.md", "headings": ["Note"],
                                    "position": "end"},
                }],
                "sources": [{"label": "new-source-bees", "role": "user",
                             "content": "I keep bees now."}],
                "commit_message": "a record operation from the MCP client test",
            }
            created = ok_json(await tools.call("memory_update", bees), "memory_update create_record")
            check(created.get("ok") is True and "topics/mcp-client.md" in created["changed_files"],
                  f"create_record installs: {created}")
            bees_text = ok_text(await tools.call("memory_get", {"path": "topics/mcp-client.md"}),
                                "memory_get after create_record")
            check("Dana keeps bees." in bees_text, f"the record is there: {bees_text}")

            noted = ok_json(await tools.call(
                "memory_note", {"text": "Dana's wheelbarrow is green now."}), "memory_note")
            check(noted.get("ok") is True and "topics/notes.md" in noted["changed_files"],
                  f"the note installs: {noted}")
            bad = refusal(await tools.call("memory_note", {"text": "x", "time": "2024-13"}),
                          "memory_note with a bad time")
            check(bad["code"] == "INVALID_ARGUMENT", f"a bad note is refused: {bad}")
            summary["revision_after"] = noted["revision"]

            # A record recalled by search names its speaker, never an object.
            heard = await tools.call("memory_search",
                                    {"query": "wheelbarrow green", "path_prefix": "sources"})
            records = [h for h in heard.structured_content["hits"] if h["kind"] == "source"]
            check(records, f"the note's record is recalled: {heard.structured_content}")
            for hit in records:
                check(isinstance(hit.get("speaker"), str) and hit["speaker"].strip(),
                      f"a record's speaker is a name: {hit}")
                check(hit["speaker"] in hit["origin"], f"the origin names the speaker: {hit}")
            check(all(key not in text_of(heard) for key in ('"display"', '"label"', '"id"')),
                  f"no speaker object in the recall: {text_of(heard)}")
            summary["speakers"] = sorted({h["speaker"] for h in records})

            # A citation leads to the record it cites, with its place in the conversation.
            notes = ok_text(await tools.call("memory_get", {"path": "topics/notes.md"}),
                            "memory_get notes")
            link = next((part.split(")")[0] for part in notes.split("](")[1:]
                         if "#source-" in part.split(")")[0]), None)
            check(link is not None, f"the note cites its record: {notes}")
            check(link.split("sources/", 1)[-1].startswith("mcp/_v2/"),
                  f"the record is archived under the surface that added it: {link}")
            record = ok_text(await tools.call("memory_get", {"path": link}),
                             "memory_get of a citation")
            check("wheelbarrow is green" in record and "turn 1 of" in record,
                  f"the citation opens its record: {record}")
            check("cited by: topics/notes.md" in record, f"the record names its citer: {record}")

            # The core, as a resource and as a prompt, holds what a core note pinned.
            pinned = ok_json(await tools.call(
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
            for missing in (session.read_resource("memory://nothing"),
                            session.get_prompt("memory_nothing")):
                try:
                    await missing
                    check(False, "an unknown resource or prompt is refused")
                except CheckFailed:
                    raise
                except Exception as error:  # noqa: BLE001 - the SDK raises McpError
                    check("no such" in str(error), f"the refusal says why: {error}")
            summary["resources"] = [str(r.uri) for r in resources]

            # Forgetting the note's record: marked destructive; a plan first (nothing changes),
            # then, confirmed, the text is gone from every file memory_grep reads.
            forget = next(t for t in listed if t.name == "memory_forget")
            check(forget.annotations is not None and forget.annotations.destructive_hint is True,
                  f"memory_forget is marked destructive: {forget.annotations}")
            before = ok_json(await tools.call("memory_status", {}), "memory_status")["revision"]
            planned = ok_json(await tools.call("memory_forget", {"record": link}),
                              "memory_forget (plan)")
            check(planned["forgotten"] is False and planned["plan"]["records"] == 1
                  and len(planned["plan"]["blocks"]) == 1, f"the plan: {planned}")
            after_plan = ok_json(await tools.call("memory_status", {}), "memory_status")
            check(after_plan["revision"] == before, f"a plan changes nothing: {after_plan}")
            done = ok_json(await tools.call("memory_forget", {"record": [link], "confirm": True}),
                           "memory_forget (confirmed)")
            check(done["forgotten"] is True and done["revision"] != before, f"forgotten: {done}")
            gone = ok_text(await tools.call("memory_grep", {"query": "wheelbarrow is green"}),
                           "memory_grep after the forget")
            check(gone == "No matches.", f"the forgotten text is still found: {gone}")
            summary["forgotten"] = done["plan"]["blocks"]
            summary["revision_after"] = done["revision"]
            summary["calls"] = tools.calls
            summary["invalid_calls_refused"] = tools.refusals


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
