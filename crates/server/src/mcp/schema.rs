//! What the MCP tools declare in `tools/list` (see `ARCHITECTURE.md#cratesserver`): the argument
//! types (their JSON Schemas are the tools' `inputSchema`), the result types (`outputSchema`,
//! and the `structuredContent` every successful call returns), and the token budget of it all.
//!
//! Key decisions:
//!
//! - Every list item has a schema: `memory_update`'s record operations are a tagged enum on `op`,
//!   its file changes one on `action`, each variant with exactly its fields. The engine still
//!   parses the items itself (one parser, one set of stable errors for the CLI, REST and MCP),
//!   so the item types here only describe them: they are schema, never parsed into.
//! - Schemas are inlined (no `$ref`) and carry no `$schema` or `title`; input fields keep their
//!   descriptions (what a model reads to form a call), output schemas drop theirs (a client
//!   checks results against them; the tool description says what comes back).
//! - The whole `tools/list` answer is counted in o200k tokens (as the core is, see
//!   `scriptorium_topics_format::tokens`) against [`TOOLS_TOKEN_BUDGET`], in a test: it is sent
//!   to the model on every turn.

use std::sync::Arc;

use rmcp::model::JsonObject;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use scriptorium_backend::inspect::{Excerpt, GrepResult, Listing};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most o200k tokens the tool definitions of `tools/list` (names, descriptions, input and
/// output schemas, annotations) may take together.
pub const TOOLS_TOKEN_BUDGET: usize = 4_800;

// ---- arguments ----

/// Arguments of `memory_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    /// What to recall: natural language or keywords.
    #[schemars(length(min = 1))]
    pub(crate) query: String,
    /// How many results (default 8).
    #[schemars(range(min = 1, max = 10))]
    #[serde(default)]
    pub(crate) top_k: Option<usize>,
    /// Only results under this path (`people`, `sources/openprogram`).
    #[serde(default)]
    pub(crate) path_prefix: Option<String>,
    /// Only records of this speaker (id or name); searches records only.
    #[serde(default)]
    pub(crate) speaker: Option<String>,
    /// Only results dated on or after `YYYY[-MM[-DD]]`.
    #[serde(default)]
    pub(crate) from: Option<String>,
    /// Only results dated on or before `YYYY[-MM[-DD]]`.
    #[serde(default)]
    pub(crate) to: Option<String>,
    /// Topic blocks only, no source records.
    #[serde(default)]
    pub(crate) topics_only: Option<bool>,
    /// One project (directory or name): its topics, topics of no project, its sessions' records.
    #[serde(default)]
    pub(crate) project: Option<String>,
}

/// Arguments of `memory_note`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoteArgs {
    /// The fact, in the user's words (one paragraph).
    #[schemars(length(min = 1))]
    pub(crate) text: String,
    /// Pin it to the core (shown in every conversation); excludes `topic`.
    #[serde(default)]
    pub(crate) core: Option<bool>,
    /// The topic file (`people/dana`; default `topics/notes.md`).
    #[serde(default)]
    pub(crate) topic: Option<String>,
    /// When it holds (default today).
    #[schemars(regex(pattern = r"^(undated|\d{4}(-\d{2}(-\d{2})?)?)$"))]
    #[serde(default)]
    pub(crate) time: Option<String>,
}

/// Arguments of `memory_grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GrepArgs {
    /// The literal text (not a regular expression).
    #[schemars(length(min = 1))]
    pub(crate) query: String,
    /// Only files under this prefix (`topics/people`).
    #[serde(default)]
    pub(crate) prefix: Option<String>,
    /// Match case exactly (default: case-insensitive).
    #[serde(default)]
    pub(crate) case_sensitive: Option<bool>,
}

/// Arguments of `memory_get`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetArgs {
    /// `topics/people/dave.md`, `core.md`, `sources/….md`, or a citation link
    /// `sources/….md#source-…`.
    #[schemars(length(min = 1))]
    pub(crate) path: String,
    /// Only this heading's section (without the `#`s).
    #[serde(default)]
    pub(crate) heading: Option<String>,
    /// Only this block (`1a2b3c4d`) with its evidence, or in an archive the record `source-…`.
    #[serde(default)]
    pub(crate) block_id: Option<String>,
    /// Start at this line (0-based): to read on after a cut.
    #[serde(default)]
    pub(crate) offset: Option<usize>,
    /// At most this many lines.
    #[schemars(range(min = 1, max = 400))]
    #[serde(default)]
    pub(crate) limit: Option<usize>,
}

/// Arguments of `memory_browse`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct BrowseArgs {
    /// Only files under this prefix (`topics`, `timeline/2024`).
    #[serde(default)]
    pub(crate) prefix: Option<String>,
}

/// Arguments of `memory_status`: none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StatusArgs {}

/// Arguments of `memory_forget` (and the body of `POST /api/memory/forget`): at least one
/// selector, and `confirm` to act rather than plan.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("anyOf" = [
    {"required": ["session"]},
    {"required": ["record"]},
    {"required": ["block"]},
    {"required": ["matching"]}
]))]
pub(crate) struct ForgetArgs {
    /// Whole conversations, by session ID.
    #[serde(default)]
    pub(crate) session: Option<OneOrMany>,
    /// Archived messages: source ID, `source-…` anchor or citation link.
    #[serde(default)]
    pub(crate) record: Option<OneOrMany>,
    /// Blocks (`1a2b3c4d`).
    #[serde(default)]
    pub(crate) block: Option<OneOrMany>,
    /// Every message, record and block holding this literal text.
    #[schemars(length(min = 4))]
    #[serde(default)]
    pub(crate) matching: Option<String>,
    /// `true`: forget now, for good. Otherwise only the plan comes back.
    #[serde(default)]
    pub(crate) confirm: Option<bool>,
}

/// A string or a non-empty list of strings (`"s1"` or `["s1", "s2"]`), taken as a list.
#[derive(Debug, Deserialize)]
#[serde(try_from = "Value")]
pub(crate) struct OneOrMany(pub(crate) Vec<String>);

impl TryFrom<Value> for OneOrMany {
    type Error = String;

    fn try_from(value: Value) -> Result<OneOrMany, String> {
        let wrong = || "expected a string or a list of strings".to_owned();
        match value {
            Value::String(one) => Ok(OneOrMany(vec![one])),
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(text) => Ok(text),
                    _ => Err(wrong()),
                })
                .collect::<Result<Vec<String>, String>>()
                .map(OneOrMany),
            _ => Err(wrong()),
        }
    }
}

impl JsonSchema for OneOrMany {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "OneOrMany".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // One schema for both forms: `minLength` applies to a string, `items` and `minItems` to
        // a list (cheaper for the model to read than an `anyOf` of two).
        schemars::json_schema!({
            "type": ["string", "array"],
            "minLength": 1,
            "minItems": 1,
            "items": {"type": "string", "minLength": 1}
        })
    }
}

/// Arguments of `memory_update`: the revision read and exactly one change form. The lists are
/// taken as JSON and checked by the engine (the CLI's and REST's checks, the same codes); their
/// items are described by [`items`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("oneOf" = [
    {"required": ["memory_changes"]},
    {"required": ["changes"]},
    {"required": ["patch"]}
]))]
pub(crate) struct UpdateArgs {
    /// The `revision` from memory_status.
    #[schemars(length(min = 1))]
    pub(crate) base_revision: String,
    /// Record operations.
    #[schemars(with = "Option<Vec<items::MemoryChange>>", length(min = 1, max = 64))]
    #[serde(default)]
    pub(crate) memory_changes: Option<Vec<Value>>,
    /// Whole topic files.
    #[schemars(with = "Option<Vec<items::FileChange>>", length(min = 1, max = 64))]
    #[serde(default)]
    pub(crate) changes: Option<Vec<Value>>,
    /// A unified diff of `topics/**/*.md`.
    #[schemars(length(min = 1))]
    #[serde(default)]
    pub(crate) patch: Option<String>,
    /// New sources, cited by their label; archived as the user's words.
    #[schemars(with = "Option<Vec<items::NewSource>>")]
    #[serde(default)]
    pub(crate) sources: Option<Vec<Value>>,
    /// The commit message.
    #[serde(default)]
    pub(crate) commit_message: Option<String>,
}

/// The items of `memory_update`'s lists, as schema only (the engine parses them; see the
/// module docs). The doc comments are the schema's descriptions, so they are short.
#[expect(dead_code, reason = "schema-only types: the engine parses these items itself")]
pub(crate) mod items {
    use schemars::JsonSchema;

    /// A record operation.
    #[derive(JsonSchema)]
    #[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
    pub(crate) enum MemoryChange {
        /// Add a paragraph (its block ID is assigned).
        CreateRecord {
            /// One paragraph, without footnotes or block ID.
            content: Content,
            /// When it holds.
            time: Time,
            /// Its evidence.
            sources: Sources,
            /// Where it goes.
            destination: Destination,
        },
        /// Replace a block's text and evidence, keeping its ID and place.
        UpdateRecord {
            /// The block ID.
            memory_id: BlockId,
            /// The new paragraph.
            content: Content,
            /// When it holds.
            time: Time,
            /// Its evidence.
            sources: Sources,
        },
        /// Delete a block.
        DeleteRecord {
            /// The block ID.
            memory_id: BlockId,
        },
        /// Move blocks with their evidence.
        MoveRecords {
            /// The block IDs, in their new order.
            #[schemars(length(min = 1))]
            memory_ids: Vec<BlockId>,
            /// Where they go.
            destination: Destination,
        },
    }

    /// A paragraph.
    #[derive(JsonSchema)]
    #[schemars(transparent)]
    pub(crate) struct Content(#[schemars(length(min = 1))] String);

    /// A block ID.
    #[derive(JsonSchema)]
    #[schemars(transparent)]
    pub(crate) struct BlockId(#[schemars(length(min = 1))] String);

    /// `YYYY`, `YYYY-MM`, `YYYY-MM-DD` or `undated`.
    #[derive(JsonSchema)]
    #[schemars(transparent)]
    pub(crate) struct Time(
        #[schemars(regex(pattern = r"^(undated|\d{4}(-\d{2}(-\d{2})?)?)$"))] String,
    );

    /// The evidence of a record.
    #[derive(JsonSchema)]
    #[schemars(transparent)]
    pub(crate) struct Sources(#[schemars(length(min = 1))] Vec<SourceRef>);

    /// One source of a record's evidence.
    #[derive(JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub(crate) struct SourceRef {
        /// An archived source ID, or a `new-source-…` label of `sources`.
        #[schemars(length(min = 1))]
        source: String,
        /// The link text.
        #[schemars(length(min = 1))]
        label: String,
    }

    /// Where records go.
    #[derive(JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub(crate) struct Destination {
        /// `topics/….md`.
        topic_path: String,
        /// The heading chain (`["Dana", "Work"]`; `[]`: before the first heading).
        #[schemars(length(max = 6))]
        headings: Vec<String>,
        /// `start`/`end` of the section, or `before`/`after` `anchor_memory_id`.
        position: Position,
        /// The block to go before or after.
        #[serde(default)]
        anchor_memory_id: Option<String>,
    }

    /// A place in a section (the variants carry no docs: a plain `enum` is what a model reads
    /// best, and the field's description says what they mean).
    #[derive(JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub(crate) enum Position {
        Start,
        End,
        Before,
        After,
    }

    /// A whole-file change.
    #[derive(JsonSchema)]
    #[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
    pub(crate) enum FileChange {
        /// Create or replace the file.
        Write {
            /// `topics/….md`.
            path: String,
            /// The whole text.
            content: String,
        },
        /// Delete the file.
        Delete {
            /// `topics/….md`.
            path: String,
        },
    }

    /// A new source.
    #[derive(JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub(crate) struct NewSource {
        /// Cited by this label.
        #[schemars(regex(pattern = r"^new-source-[a-z0-9-]+$"))]
        label: String,
        /// Who said it.
        role: Role,
        /// The words, verbatim.
        content: String,
        /// When (ISO 8601).
        #[serde(default)]
        observed_at: Option<String>,
    }

    /// The role of a new source.
    #[derive(JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub(crate) enum Role {
        User,
        Assistant,
        System,
        Tool,
    }
}

// ---- results ----

/// What `memory_search` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SearchOutput {
    #[schemars(extend("const" = true))]
    pub(crate) ok: bool,
    /// The recall text, fenced once in `<memory-context>` (or "No memory matched the query.").
    pub(crate) recall: String,
    pub(crate) hits: Vec<SearchHit>,
    /// What this search did about files edited outside a transaction.
    pub(crate) outside_edits: Option<String>,
}

/// One search result.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SearchHit {
    pub(crate) kind: HitKind,
    /// The block ID or source ID.
    pub(crate) id: String,
    /// `path#^block` or `path#source-…`, for memory_get.
    pub(crate) link: String,
    /// Where it comes from, on one line.
    pub(crate) origin: String,
    pub(crate) date: Option<String>,
    /// A record's speaker by name.
    pub(crate) speaker: Option<String>,
    /// The matching records a block cites.
    pub(crate) evidence: Vec<String>,
    pub(crate) score: f32,
    pub(crate) content: String,
}

/// A block of a topic or a record of an archive.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HitKind {
    Block,
    Source,
}

/// What `memory_grep` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct GrepOutput {
    #[schemars(extend("const" = true))]
    pub(crate) ok: bool,
    #[serde(flatten)]
    pub(crate) found: GrepResult,
}

/// What `memory_get` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct GetOutput {
    #[schemars(extend("const" = true))]
    pub(crate) ok: bool,
    #[serde(flatten)]
    pub(crate) excerpt: Excerpt,
}

/// What `memory_browse` returns.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct BrowseOutput {
    #[schemars(extend("const" = true))]
    pub(crate) ok: bool,
    #[serde(flatten)]
    pub(crate) listing: Listing,
}

/// What `memory_forget` (and `POST /api/memory/forget`) returns: the plan, and once confirmed
/// what was done.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ForgetOutput {
    #[schemars(extend("const" = true))]
    pub(crate) ok: bool,
    /// Whether it was carried out (`false`: only planned).
    pub(crate) forgotten: bool,
    pub(crate) plan: ForgetPlanOutput,
    /// Present once forgotten.
    #[serde(flatten)]
    pub(crate) done: Option<ForgetDone>,
}

/// What a forget removes (see `scriptorium_backend::forget::ForgetPlan`): the small sets by
/// name, the large ones (a long session's messages and records) counted; never the `matching`
/// text.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ForgetPlanOutput {
    /// `f-` and 16 hex digits.
    pub(crate) id: String,
    /// Sessions forgotten whole.
    pub(crate) sessions: Vec<String>,
    /// Messages whose text goes (their place in the conversation stays).
    pub(crate) messages: usize,
    /// Session titles that go.
    pub(crate) titles: usize,
    /// Archived records that become tombstones.
    pub(crate) records: usize,
    /// Blocks removed.
    pub(crate) blocks: Vec<String>,
    /// Blocks that stay but lose a citation.
    pub(crate) uncited: Vec<String>,
    /// Workspace files that change.
    pub(crate) files: Vec<String>,
    /// Git commits rewritten.
    pub(crate) commits: usize,
}

/// What a confirmed forget did.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ForgetDone {
    pub(crate) commits_rewritten: usize,
    /// The revision of the forget's install.
    pub(crate) revision: String,
    pub(crate) commit: Option<String>,
    /// `none` (no sync remote), `replaced` or `pending` (the next sync replaces it).
    pub(crate) remote: String,
}

// ---- schemas ----

/// The `inputSchema` of an argument type: inlined, described, root `type: object`.
pub(crate) fn input_schema<T: JsonSchema>() -> Arc<JsonObject> {
    Arc::new(schema::<T>(SchemaSettings::draft2020_12().for_deserialize(), true))
}

/// The `outputSchema` of a result type: what it serializes to, inlined, without descriptions.
pub(crate) fn output_schema<T: JsonSchema>() -> Arc<JsonObject> {
    Arc::new(schema::<T>(SchemaSettings::draft2020_12().for_serialize(), false))
}

fn schema<T: JsonSchema>(mut settings: SchemaSettings, descriptions: bool) -> JsonObject {
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let mut value = settings.into_generator().into_root_schema_for::<T>().to_value();
    if let Some(root) = value.as_object_mut() {
        root.remove("title");
        root.remove("description");
    }
    tidy(&mut value, descriptions);
    match value {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

/// Drops what tells a model nothing and costs tokens on every turn: `title`s, the integer
/// formats schemars adds (`uint`, `int64`: not JSON Schema formats, validators ignore them), and
/// in output schemas the descriptions and the `minimum: 0` of counts; a list item's own
/// description (its list's says it). A `oneOf` of bare string constants becomes an `enum`; in
/// input schemas an optional property is its type alone (an absent argument is the default; an
/// explicit `null` is still accepted by the server).
fn tidy(value: &mut Value, descriptions: bool) {
    match value {
        Value::Object(object) => {
            if !descriptions && object.get("minimum") == Some(&Value::from(0)) {
                object.remove("minimum");
            }
            if descriptions {
                let required: Vec<String> = object
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                    .unwrap_or_default();
                if let Some(Value::Object(properties)) = object.get_mut("properties") {
                    for (name, schema) in properties.iter_mut() {
                        if !required.contains(name) {
                            drop_null(schema);
                        }
                    }
                }
            }
            let numeric_format = object.get("format").and_then(Value::as_str).is_some_and(|f| {
                f.starts_with("uint") || f.starts_with("int") || f == "float" || f == "double"
            });
            if numeric_format {
                object.remove("format");
            }
            if !descriptions {
                object.remove("description");
            }
            object.remove("title");
            if object.get("default").is_some_and(Value::is_null) {
                object.remove("default");
            }
            // An item's type doc ("A record operation.") repeats its list's description.
            if let Some(Value::Object(items)) = object.get_mut("items") {
                items.remove("description");
            }
            for (key, child) in object.iter_mut() {
                // `properties` maps names to schemas: a property may be called `description`.
                if key == "properties" {
                    if let Value::Object(properties) = child {
                        properties.values_mut().for_each(|schema| tidy(schema, descriptions));
                    }
                } else {
                    tidy(child, descriptions);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| tidy(item, descriptions)),
        _ => {}
    }
    if let Value::Object(object) = value {
        let constants: Option<Vec<Value>> =
            object.get("oneOf").and_then(Value::as_array).and_then(|variants| {
                variants
                    .iter()
                    .map(|variant| {
                        let variant = variant.as_object()?;
                        let bare = variant.keys().all(|k| k == "const" || k == "type");
                        (bare && variant.get("type") == Some(&Value::from("string")))
                            .then(|| variant.get("const").cloned())
                            .flatten()
                    })
                    .collect()
            });
        if let Some(constants) = constants {
            object.remove("oneOf");
            object.insert("type".into(), "string".into());
            object.insert("enum".into(), Value::Array(constants));
        }
    }
}

/// `type: [T, "null"]` → `type: T`; `type: [T, U, "null"]` → `type: [T, U]`.
fn drop_null(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else { return };
    if let Some(Value::Array(types)) = object.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        match kept.len() {
            1 => {
                object.insert("type".into(), kept[0].clone());
            }
            n if n > 1 && n < types.len() => {
                object.insert("type".into(), Value::Array(kept));
            }
            _ => {}
        }
    }
}
