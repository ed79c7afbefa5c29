//! The items of a Responses stream: `output_item.added` / `.done` and the
//! items of a whole response, each becoming a call, a text, a reasoning block
//! or a result (the events' own handling is in `mod.rs`).

#![allow(clippy::wildcard_imports)]

use super::*;

impl State {
    pub(super) fn item(
        &mut self,
        s: &mut Stream,
        kind: &str,
        oi: Option<i64>,
        item: &Item<'_>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        let done = kind == "response.output_item.done";
        let item_id = text(&item.id);
        let oi = oi.or_else(|| self.items.get(item_id).copied());
        let item_type = item.kind.as_deref().unwrap_or_default();
        let is_call = matches!(item_type, "function_call" | CUSTOM);
        // A call's item id is checked against its output index first (`call`).
        if !item_id.is_empty() && !is_call {
            if let Some(oi) = oi {
                self.items.insert(item_id.to_owned(), oi);
            }
        }
        match item_type {
            "function_call" | CUSTOM => {
                let custom = item_type == CUSTOM;
                let key = self.call(
                    s,
                    oi,
                    item_id,
                    (text(&item.call_id), text(&item.name)),
                    custom.then_some(CUSTOM),
                    !done,
                    live,
                )?;
                let given = if custom { &item.input } else { &item.arguments };
                if custom {
                    self.xai_server_tool(s, key, text(&item.name));
                }
                let given: Option<&str> = match given {
                    Some(Loose::Str(t)) => Some(t.as_ref()),
                    Some(Loose::Json(_)) => {
                        return Err(Fail::Bad {
                            kind: crate::providers::DecodeKind::WrongType,
                            detail: format!(
                                "field `item.{}`: a {item_type} item's {} must be a string",
                                if custom { "input" } else { "arguments" },
                                if custom { "input" } else { "arguments" },
                            ),
                        })
                    }
                    None => None,
                };
                let oi_key = oi.unwrap_or(-1);
                if done {
                    self.open_items.remove(&oi_key);
                    if let Some(args) = given {
                        s.replace_input(C, key, args, live)?;
                    } else if let Some(found) = item.restated {
                        found.replace(s, key, live)?;
                    }
                    s.item_done(C, key, live);
                    // After the item's end a delta is Q25's, whatever it says.
                    self.args_done.remove(&oi_key);
                    self.done_early.remove(&oi_key);
                } else if self.done_early.remove(&oi_key) {
                    self.open_items.insert(oi_key);
                    // Q44: the item announced after its arguments were done
                    // brings no arguments of its own, or the same ones.
                    let ch = s.choice(C)?;
                    let held = ch.tools.get(key).map_or("", |b| b.input.as_str());
                    if given.is_some_and(|g| !g.is_empty() && g != held) {
                        return Err(Fail::Bad {
                            kind: crate::providers::DecodeKind::BadValue,
                            detail: format!(
                                "output_item.added for {} brings other arguments than its \
                                 function_call_arguments.done, which came first; which ones \
                                 the model meant cannot be told",
                                ch.call_label(C, key)
                            ),
                        });
                    }
                    s.item_done(C, key, live);
                } else {
                    self.open_items.insert(oi_key);
                    if let Some(args) = given {
                        s.add_to_call(C, key, "", "", args, None, live)?;
                    }
                }
            }
            t if CLIENT_ITEMS.contains(&t) || SERVER_ITEMS.contains(&t) => {
                self.whole_item(s, t, done, oi, input, live)?;
            }
            "reasoning" if done => {
                let signature = text(&item.encrypted_content);
                reasoning_done(s, oi.unwrap_or(-1), item_id, signature, live)?;
            }
            "reasoning" | "message" => {}
            other => s.unknown(&format!("{kind}:{other}")),
        }
        Ok(())
    }

    /// A call kept whole as its item (client tools that are not JSON functions,
    /// and the provider's own tools): the input is the item's own fields as a
    /// JSON object, the provider state the whole item; a server-side item's
    /// result fields become a tool-result block when it is done.
    pub(super) fn whole_item(
        &mut self,
        s: &mut Stream,
        item_type: &str,
        done: bool,
        oi: Option<i64>,
        input: Input<'_>,
        live: &mut Live<'_>,
    ) -> R {
        let server_side = SERVER_ITEMS.contains(&item_type);
        let raw = input.parse::<RawItem>()?.item.unwrap_or_default();
        let field = |k: &str| raw.get(k).and_then(Value::as_str).unwrap_or_default();
        let id = [field("call_id"), field("id")]
            .into_iter()
            .find(|i| !i.is_empty())
            .unwrap_or_default();
        let name = match field("name") {
            "" => item_type.strip_suffix("_call").unwrap_or(item_type),
            n => n,
        };
        let mut args = Map::new();
        let mut result = Map::new();
        for (k, v) in &raw {
            if BOOKKEEPING.contains(&k.as_str()) {
                continue;
            }
            if server_side && RESULT_FIELDS.contains(&k.as_str()) {
                if !v.is_null() {
                    result.insert(k.clone(), v.clone());
                }
            } else {
                args.insert(k.clone(), v.clone());
            }
        }
        let args = Value::Object(args).to_string();
        // The item without its result (kept once, in the result block).
        let whole: Map<String, Value> = raw
            .iter()
            .filter(|(k, _)| !(server_side && RESULT_FIELDS.contains(&k.as_str())))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let whole = Value::Object(whole).to_string();
        let oi_key = oi.unwrap_or(-1);
        let src: Src = (NS_TOOL, oi_key, 0);
        let existing = s.choice(C)?.call_at(src).filter(|_| done);
        let key = match existing {
            Some(k) => {
                s.replace_input(C, k, &args, live)?;
                s.add_to_call(C, k, id, "", "", Some((&whole, ITEM_FORMAT)), live)?;
                k
            }
            None => {
                let opening = Opening {
                    provider_index: Some(oi_key),
                    src: Some(src),
                    id,
                    name,
                    input: &args,
                    state: Some((&whole, ITEM_FORMAT)),
                    kind: Some(item_type),
                    server_side,
                    ..Opening::default()
                };
                s.new_call(C, opening, live)?
            }
        };
        if !done {
            return Ok(());
        }
        s.item_done(C, key, live);
        if server_side && !result.is_empty() {
            let text = ["output", "result"]
                .into_iter()
                .filter_map(|k| result.get(k).and_then(Value::as_str))
                .filter(|t| item_type != "image_generation_call" || t.is_empty())
                .map(|t| Block::Text(t.to_owned()))
                .collect();
            let is_error =
                result.get("error").is_some_and(|e| !e.is_null()) || field("status") == "failed";
            let block = ToolResultBlock {
                tool_use_id: s.call_id(C, key),
                content: text,
                is_error,
                kind: item_type.to_owned(),
                provider_state: Some(Value::Object(result).to_string()),
                provider_state_format: FORMAT.to_owned(),
            };
            s.tool_result(C, None, block)?;
        }
        Ok(())
    }
}

/// The end of the reasoning item `item_id` at output index `oi`: its
/// signature and item id kept, if it has a block or a signature.
pub(super) fn reasoning_done(
    s: &mut Stream,
    oi: i64,
    item_id: &str,
    signature: &str,
    live: &mut Live<'_>,
) -> R {
    let state = (!item_id.is_empty()).then(|| json_string(item_id));
    let frag = ThinkingFragment {
        signature,
        signature_format: if signature.is_empty() { "" } else { FORMAT },
        provider_state: state.as_deref(),
        provider_state_format: FORMAT,
        ..ThinkingFragment::default()
    };
    let src = (NS_REASONING, oi, 0);
    // Only an item with something to keep becomes a block.
    let create = !signature.is_empty() || s.choice(C)?.has_src(src);
    if create {
        s.thinking(C, Some(src), frag, true, live)?;
    }
    Ok(())
}
