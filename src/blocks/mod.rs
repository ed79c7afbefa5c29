//! The provider-neutral block model shared by the accumulators and the wire codec.
//!
//! `ToolUseBlock::input` is the raw JSON text exactly as received: possibly partial,
//! possibly empty. Nothing in this layer parses it.

/// The kind of an ordinary JSON function call.
pub const FUNCTION: &str = "function";
/// The kind of a call whose input is free-form text, not JSON (Responses
/// `custom_tool_call`).
pub const CUSTOM: &str = "custom_tool_call";
/// The kinds of a provider's request that the client approve a call the
/// provider runs (Responses `mcp_approval_request`, Q60): never a call for the
/// client to run or validate; answered by an approval.
pub const APPROVAL_KINDS: [&str; 1] = ["mcp_approval_request"];

/// One tool call: the model's request to run a named tool.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ToolUseBlock {
    pub id: String,
    pub name: String,
    /// Raw JSON text of the arguments, concatenated verbatim from the fragments
    /// (free-form text for a [`CUSTOM`] call).
    pub input: String,
    /// Raw JSON text of provider state (for example a Gemini `thoughtSignature`).
    pub provider_state: Option<String>,
    pub provider_state_format: String,
    /// [`FUNCTION`] for a JSON function call; otherwise the provider's own type
    /// of the call (`custom_tool_call`, `computer_call`, `server_tool_use`,
    /// `web_search_call`, …).
    pub kind: String,
    /// The provider ran the call itself: it is never for the client to execute.
    pub server_side: bool,
}

impl Default for ToolUseBlock {
    fn default() -> Self {
        Self {
            id: String::new(),
            name: String::new(),
            input: String::new(),
            provider_state: None,
            provider_state_format: String::new(),
            kind: FUNCTION.to_owned(),
            server_side: false,
        }
    }
}

impl ToolUseBlock {
    /// True when the input is free-form text rather than JSON.
    #[must_use]
    pub fn is_text_input(&self) -> bool {
        self.kind == CUSTOM
    }
}

/// Reasoning text, with the provider's signature when it sends one.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ThinkingBlock {
    pub thinking: String,
    pub signature: String,
    pub signature_format: String,
    pub provider_state: Option<String>,
    pub provider_state_format: String,
}

/// An image, either by URL or as (base64) data.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ImageBlock {
    pub media_type: String,
    pub url: String,
    pub data: String,
}

/// Audio, by URL or as (base64) data, with an optional transcript.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct AudioBlock {
    pub media_type: String,
    pub url: String,
    pub data: String,
    pub transcript: String,
}

/// A document (PDF, plain text, …), by URL or as data, with an optional title.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct DocumentBlock {
    pub media_type: String,
    pub url: String,
    pub data: String,
    pub title: String,
}

/// The result of one tool call, tied to it by `tool_use_id`.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ToolResultBlock {
    pub tool_use_id: String,
    pub content: Vec<Block>,
    pub is_error: bool,
    /// Empty for a result the client sends; the provider's own type for the
    /// result of a server-side tool (`web_search_tool_result`, …).
    pub kind: String,
    /// Raw JSON text of the provider's result as it came (server-side tools),
    /// to be sent back unchanged.
    pub provider_state: Option<String>,
    pub provider_state_format: String,
}

/// Any content block.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Block {
    Text(String),
    Refusal(String),
    Thinking(ThinkingBlock),
    Image(ImageBlock),
    Audio(AudioBlock),
    Document(DocumentBlock),
    ToolUse(ToolUseBlock),
    ToolResult(ToolResultBlock),
}

impl Block {
    /// The wire tag of this block.
    #[must_use]
    pub fn type_tag(&self) -> &'static str {
        match self {
            Block::Text(_) => "text",
            Block::Refusal(_) => "refusal",
            Block::Thinking(_) => "thinking",
            Block::Image(_) => "image",
            Block::Audio(_) => "audio",
            Block::Document(_) => "document",
            Block::ToolUse(_) => "tool_use",
            Block::ToolResult(_) => "tool_result",
        }
    }
}

/// A message: a role and its blocks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    pub role: String,
    pub blocks: Vec<Block>,
}

/// The message that answers one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ToolResultMessage {
    pub tool_use_id: String,
    pub blocks: Vec<Block>,
    pub is_error: bool,
}

/// Either kind of message, as the wire decoder finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnyMessage {
    Message(Message),
    ToolResult(ToolResultMessage),
}
