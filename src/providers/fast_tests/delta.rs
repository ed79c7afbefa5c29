//! `Stream::delta_to_call` (the choice looked up once for a fragment of an
//! open call) against what it stands for, `call_for_delta` then
//! `add_to_call`: any run of fragments (ids, names, inputs, states, stops,
//! a small byte budget) gives the same results, errors, live events,
//! messages and budget on both.

use proptest::prelude::*;

use super::super::state::{Live, LiveDetail, Src, Stream, NS_TOOL};
use super::{AssemblerLimits, LiveEvent};

/// One step of a run: a fragment for the call at a position, or its stop.
#[derive(Debug, Clone)]
enum Step {
    Fragment {
        at: i64,
        id: &'static str,
        name: &'static str,
        input: &'static str,
        state: Option<(&'static str, &'static str)>,
    },
    Stop(i64),
}

fn step() -> impl Strategy<Value = Step> {
    let at = 0..3_i64;
    prop_oneof![
        4 => (
            at.clone(),
            prop::sample::select(vec!["", "", "c1", "c2"]),
            prop::sample::select(vec!["", "", "f", "g"]),
            prop::sample::select(vec!["", "{", "\"a\":1", "}", "{\"a\":1}", "{\"a\":1}x"]),
            prop::option::of(prop::sample::select(vec![("\"s\"", "F"), ("\"t\"", "F"), ("", "F")])),
        )
            .prop_map(|(at, id, name, input, state)| Step::Fragment { at, id, name, input, state }),
        1 => at.prop_map(Step::Stop),
    ]
}

/// Runs `steps` on a fresh stream, each fragment through `once` (the single
/// lookup) or through its two calls; gives every result and the end state.
fn run(steps: &[Step], budget: usize, once: bool) -> (Vec<String>, String, usize) {
    let limits = AssemblerLimits {
        max_total_bytes: budget,
        ..AssemblerLimits::default()
    };
    let mut s = Stream::new(limits);
    let mut events: Vec<LiveEvent> = Vec::new();
    let mut results = Vec::new();
    {
        let mut live = Live::new(Some(&mut events), LiveDetail::Full);
        for step in steps {
            let r = match *step {
                Step::Fragment {
                    at,
                    id,
                    name,
                    input,
                    state,
                } => {
                    let src: Src = (NS_TOOL, at, 0);
                    if once {
                        s.delta_to_call(0, src, id, name, input, state, &mut live)
                    } else {
                        s.call_for_delta(0, src, &mut live).and_then(|key| {
                            s.add_to_call(0, key, id, name, input, state, &mut live)
                        })
                    }
                }
                Step::Stop(at) => s.stop_block(0, (NS_TOOL, at, 0), &mut live),
            };
            results.push(format!("{r:?}"));
        }
    }
    let end = format!("{:?} {events:?}", s.messages());
    (results, end, s.content_bytes)
}

proptest! {
    #[test]
    fn a_fragment_found_once_is_the_fragment_found_twice(
        steps in prop::collection::vec(step(), 0..24),
        budget in prop_oneof![Just(usize::MAX), 0..60_usize],
    ) {
        prop_assert_eq!(run(&steps, budget, true), run(&steps, budget, false));
    }
}

#[test]
fn what_the_two_calls_refuse_the_single_lookup_refuses() {
    let open = Step::Fragment {
        at: 1,
        id: "c1",
        name: "f",
        input: "{",
        state: None,
    };
    let more = Step::Fragment {
        at: 1,
        id: "",
        name: "",
        input: "\"a\":1}",
        state: None,
    };
    // a fragment after the call's stop (Q25)
    let (results, _, _) = run(
        &[open.clone(), Step::Stop(1), more.clone()],
        usize::MAX,
        true,
    );
    assert!(results[2].contains("AfterStop"), "{results:?}");
    // a fragment over the byte budget, on an open call
    let (results, _, used) = run(&[open.clone(), more.clone()], 6, true);
    assert_eq!(results[0], "Ok(())");
    assert!(results[1].contains("MaxTotalBytes"), "{results:?}");
    assert_eq!(used, 4, "c1, f and {{ only");
    // another call's id (the id names one call only)
    let other = Step::Fragment {
        at: 2,
        id: "c1",
        name: "",
        input: "",
        state: None,
    };
    let (results, _, _) = run(&[open, other], usize::MAX, true);
    assert!(results[1].starts_with("Err"), "{results:?}");
}
