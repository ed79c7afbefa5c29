//! The floor of whole bodies (a non-streamed response): one typed parse of the
//! body into the calls it holds, by dialect.

use std::borrow::Cow;

use _toolstitch::providers::Dialect;
use serde::Deserialize;

use super::dialects::{apply_gemini, compact, new_call, ResponsesItem};
use super::typed::{Function, Map};

#[derive(Deserialize)]
struct ChatBody<'a> {
    #[serde(borrow)]
    choices: Vec<ChatBodyChoice<'a>>,
}

#[derive(Deserialize)]
struct ChatBodyChoice<'a> {
    #[serde(borrow)]
    message: ChatBodyMessage<'a>,
}

#[derive(Deserialize)]
struct ChatBodyMessage<'a> {
    #[serde(borrow, default)]
    tool_calls: Option<Vec<IdAndFunction<'a>>>,
}

#[derive(Deserialize)]
struct IdAndFunction<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    function: Function<'a>,
}

fn text_calls(map: &mut Map, calls: Vec<IdAndFunction<'_>>) {
    for tc in calls {
        let n = map.len() as u64;
        let mut call = new_call(tc.id, tc.function.name.unwrap_or_default());
        call.args = tc.function.arguments.unwrap_or_default().into_owned();
        map.insert(n, call);
    }
}

#[derive(Deserialize)]
struct ResponsesBody<'a> {
    #[serde(borrow)]
    output: Vec<ResponsesItem<'a>>,
}

#[derive(Deserialize)]
struct AnthropicBody<'a> {
    #[serde(borrow)]
    content: Vec<AnthropicBlock<'a>>,
}

#[derive(Deserialize)]
struct AnthropicBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    input: Option<sonic_rs::Value>,
}

#[derive(Deserialize)]
struct BedrockBody<'a> {
    #[serde(borrow)]
    output: BedrockOutput<'a>,
}

#[derive(Deserialize)]
struct BedrockOutput<'a> {
    #[serde(borrow)]
    message: BedrockMessage<'a>,
}

#[derive(Deserialize)]
struct BedrockMessage<'a> {
    #[serde(borrow)]
    content: Vec<BedrockBlock<'a>>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct BedrockBlock<'a> {
    #[serde(borrow, default)]
    toolUse: Option<BedrockToolUse<'a>>,
}

#[derive(Deserialize)]
#[allow(non_snake_case)]
struct BedrockToolUse<'a> {
    #[serde(borrow)]
    toolUseId: Cow<'a, str>,
    #[serde(borrow)]
    name: Cow<'a, str>,
    input: sonic_rs::Value,
}

#[derive(Deserialize)]
struct CohereBody<'a> {
    #[serde(borrow)]
    message: CohereBodyMessage<'a>,
}

#[derive(Deserialize)]
struct CohereBodyMessage<'a> {
    #[serde(borrow, default)]
    tool_calls: Option<Vec<IdAndFunction<'a>>>,
}

fn push(map: &mut Map, id: Cow<'_, str>, name: Cow<'_, str>, args: &str) {
    let n = map.len() as u64;
    let mut call = new_call(id, name);
    call.args = args.to_owned();
    map.insert(n, call);
}

pub(crate) fn body(map: &mut Map, dialect: Dialect, data: &[u8]) {
    match dialect {
        Dialect::OpenAiChat => {
            let b: ChatBody<'_> = sonic_rs::from_slice(data).unwrap();
            for c in b.choices {
                text_calls(map, c.message.tool_calls.unwrap_or_default());
            }
        }
        Dialect::OpenAiResponses => {
            let b: ResponsesBody<'_> = sonic_rs::from_slice(data).unwrap();
            for item in b.output.into_iter().filter(|i| i.kind == "function_call") {
                let args = item.arguments.unwrap_or_default();
                let (id, name) = (
                    item.call_id.unwrap_or_default(),
                    item.name.unwrap_or_default(),
                );
                push(map, id, name, &args);
            }
        }
        Dialect::Anthropic => {
            let b: AnthropicBody<'_> = sonic_rs::from_slice(data).unwrap();
            for block in b.content.into_iter().filter(|b| b.kind == "tool_use") {
                let args = compact(block.input.as_ref());
                let (id, name) = (block.id.unwrap_or_default(), block.name.unwrap_or_default());
                push(map, id, name, &args);
            }
        }
        Dialect::Bedrock => {
            let b: BedrockBody<'_> = sonic_rs::from_slice(data).unwrap();
            for t in b
                .output
                .message
                .content
                .into_iter()
                .filter_map(|b| b.toolUse)
            {
                let args = compact(Some(&t.input));
                push(map, t.toolUseId, t.name, &args);
            }
        }
        Dialect::Gemini => apply_gemini(map, sonic_rs::from_slice(data).unwrap()),
        Dialect::Cohere => {
            let b: CohereBody<'_> = sonic_rs::from_slice(data).unwrap();
            text_calls(map, b.message.tool_calls.unwrap_or_default());
        }
        other => panic!("no whole body for {}", other.name()),
    }
}
