//! xAI's Responses API (Q47): its own tools streamed as `custom_tool_call`
//! items, told from the response's model.

#![allow(clippy::wildcard_imports)]

use super::*;

/// The tools xAI runs itself and streams as `custom_tool_call` items (Q47), by
/// name: the sub-tools of its `x_search`, `web_search` and `code_execution`
/// tools, as vercel/ai's xAI provider lists them.
pub(crate) const XAI_SERVER_TOOLS: [&str; 10] = [
    "x_user_search",
    "x_keyword_search",
    "x_semantic_search",
    "x_thread_fetch",
    "view_x_video",
    "view_image",
    "web_search",
    "web_search_with_snippets",
    "browse_page",
    "code_execution",
];

/// Whether a response's model is one of xAI's (Grok), whose `custom_tool_call`
/// items with a name of [`XAI_SERVER_TOOLS`] the server ran (Q47): exactly
/// the spellings docs/quirks.md lists, `grok-<version>` with or without an
/// `xai/` prefix, in any case. Nothing else (`grok`, `other/grok-4`,
/// `grok4`) is taken for xAI's.
fn is_xai_model(model: &str) -> bool {
    let m = model.to_ascii_lowercase();
    let m = m.strip_prefix("xai/").unwrap_or(&m);
    m.strip_prefix("grok-").is_some_and(|version| !version.is_empty())
}

impl State {
    pub(super) fn remember_model(&mut self, response: Option<&Response>) {
        if let Some(m) = response.and_then(|r| r.model.as_deref()) {
            if self.model.is_none() {
                self.model = Some(m.to_owned());
            }
        }
    }

    /// Q47: a `custom_tool_call` of an xAI model whose name is one of xAI's own
    /// tools ([`XAI_SERVER_TOOLS`]) is a call the server ran, not the client's.
    pub(super) fn xai_server_tool(&self, s: &mut Stream, key: i64, name: &str) {
        let xai = self.model.as_deref().is_some_and(is_xai_model);
        if !xai || !XAI_SERVER_TOOLS.contains(&name) {
            return;
        }
        let Some(ch) = s.existing(C) else {
            return;
        };
        match ch.meta_mut(key) {
            Some(m) if !m.server_side => m.server_side = true,
            _ => return,
        }
        let model = self.model.clone().unwrap_or_default();
        s.note(
            C,
            NoteKind::XaiServerTool,
            Some(key),
            format!(
                "a custom_tool_call named {name:?} from the xAI model {model:?}: one of xAI's own \
                 tools, which its server ran; not a call for the client"
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn xai_models_are_the_listed_spellings_in_any_case() {
        for yes in [
            "grok-4",
            "grok-4-fast-reasoning",
            "xai/grok-3",
            "Grok-4",
            "XAI/GROK-4",
            "xAI/Grok-2-1212",
        ] {
            assert!(super::is_xai_model(yes), "{yes}");
        }
        for no in [
            "grok",
            "grok-",
            "grok4",
            "x-ai/grok-4",
            "openrouter/grok-4",
            "xai/",
            "gpt-4o",
            "my-grok-4",
            "xai/xai/grok-4",
        ] {
            assert!(!super::is_xai_model(no), "{no}");
        }
    }
}
