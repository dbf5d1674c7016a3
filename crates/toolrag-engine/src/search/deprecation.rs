//! Deprecated tools rank below their replacements.
//!
//! The registry reads deprecation and resolves each replacement to a tool id
//! at load time (`ToolDef::deprecated`); here those ids become ordinals once
//! per index generation, and each search moves a deprecated tool to just
//! below its replacement, or, when the replacement is missing from the fused
//! list but passes the request's filter, inserts the replacement just above
//! the deprecated tool.

use std::collections::HashMap;

use toolrag_core::registry::ToolDef;

/// The replacement edges of one index generation.
#[derive(Debug, Default)]
pub(crate) struct Replacements {
    /// By deprecated tool: its replacement and its depth (1 when the
    /// replacement is not itself a deprecated tool with an edge, else one
    /// more than the replacement's). Cycles (`a` replaced by `b`, `b` by
    /// `a`) are dropped: neither tool can rank below the other.
    edges: HashMap<u32, Edge>,
}

#[derive(Debug, Clone)]
struct Edge {
    /// The replacement's ordinal.
    to: u32,
    depth: u32,
    /// The deprecated tool's handle, for the note of an inserted replacement.
    handle: String,
}

impl Replacements {
    /// The edges of `tools` (in ordinal order), from each deprecated tool's
    /// resolved `replacement_id`.
    pub fn new(tools: &[ToolDef]) -> Replacements {
        let ordinal: HashMap<&str, u32> = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.as_str(), i as u32))
            .collect();
        let mut to: HashMap<u32, u32> = tools
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                let id = t.deprecated.as_ref()?.replacement_id.as_deref()?;
                let r = *ordinal.get(id)?;
                (r != i as u32).then_some((i as u32, r))
            })
            .collect();
        // Drop the edges on cycles.
        let mut cyclic = Vec::new();
        for &start in to.keys() {
            let mut path = vec![start];
            let mut cur = start;
            while let Some(&next) = to.get(&cur) {
                if let Some(at) = path.iter().position(|&p| p == next) {
                    cyclic.extend_from_slice(&path[at..]);
                    break;
                }
                path.push(next);
                cur = next;
            }
        }
        for c in cyclic {
            to.remove(&c);
        }
        let depth = |mut cur: u32| {
            let mut d = 0;
            while let Some(&next) = to.get(&cur) {
                d += 1;
                cur = next;
            }
            d
        };
        let edges = to
            .iter()
            .map(|(&from, &r)| {
                let edge = Edge {
                    to: r,
                    depth: depth(from),
                    handle: tools[from as usize].handle(),
                };
                (from, edge)
            })
            .collect();
        Replacements { edges }
    }

    /// Reorders `ranked` so that every deprecated tool in it is below its
    /// replacement, inserting replacements that `keeps` accepts but the
    /// list lacks (with the deprecated tool's score). Returns the notes of
    /// the inserted replacements, by ordinal.
    pub fn demote(
        &self,
        ranked: &mut Vec<(u32, f32)>,
        keeps: &dyn Fn(u32) -> bool,
    ) -> Vec<(u32, String)> {
        if self.edges.is_empty() {
            return Vec::new();
        }
        let mut notes = Vec::new();
        // Insert the missing replacements. An inserted one is looked at in
        // turn, so a chain brings each of its tools at most once.
        let mut i = 0;
        while i < ranked.len() {
            let (o, score) = ranked[i];
            if let Some(e) = self.edges.get(&o) {
                if keeps(e.to) && !ranked.iter().any(|(x, _)| *x == e.to) {
                    ranked.insert(i, (e.to, score));
                    notes.push((e.to, format!("replaces deprecated {}", e.handle)));
                    continue;
                }
            }
            i += 1;
        }
        // Move each deprecated tool to just below its replacement, shallow
        // ones first: a tool's replacement is then in its final place, and
        // moving one tool leaves the order of the others as it was.
        let mut deprecated: Vec<(u32, &Edge)> = ranked
            .iter()
            .filter_map(|(o, _)| self.edges.get(o).map(|e| (*o, e)))
            .collect();
        deprecated.sort_by_key(|(_, e)| e.depth);
        for (o, e) in deprecated {
            let pos = |x: u32| ranked.iter().position(|(r, _)| *r == x);
            let (Some(at), Some(to)) = (pos(o), pos(e.to)) else {
                continue;
            };
            if to > at {
                // Below its replacement, and scored no higher, so that the
                // scores still fall down the list.
                let mut item = ranked.remove(at);
                item.1 = item.1.min(ranked[to - 1].1);
                ranked.insert(to, item);
            }
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolrag_core::registry::{test_tool, Deprecation};

    fn edges(pairs: &[(u32, u32)]) -> Replacements {
        let to: HashMap<u32, u32> = pairs.iter().copied().collect();
        let n = pairs.iter().map(|&(a, b)| a.max(b)).max().unwrap_or(0) + 1;
        let tools: Vec<ToolDef> = (0..n)
            .map(|i| {
                let mut t = test_tool("t", &i.to_string());
                if let Some(r) = to.get(&i) {
                    t.deprecated = Some(Deprecation {
                        replacement: Some(r.to_string()),
                        replacement_id: Some(format!("t/{r}")),
                    });
                }
                t
            })
            .collect();
        Replacements::new(&tools)
    }

    fn run(r: &Replacements, list: &[u32], keeps: &dyn Fn(u32) -> bool) -> (Vec<u32>, Vec<u32>) {
        let mut ranked: Vec<(u32, f32)> = list
            .iter()
            .enumerate()
            .map(|(i, &o)| (o, 1.0 - i as f32 / 10.0))
            .collect();
        let notes = r.demote(&mut ranked, keeps);
        (
            ranked.into_iter().map(|(o, _)| o).collect(),
            notes.into_iter().map(|(o, _)| o).collect(),
        )
    }

    #[test]
    fn a_deprecated_tool_goes_just_below_its_replacement() {
        let r = edges(&[(0, 3)]);
        assert_eq!(
            run(&r, &[0, 1, 2, 3, 4], &|_| true),
            (vec![1, 2, 3, 0, 4], vec![])
        );
        // Already below: unchanged.
        assert_eq!(run(&r, &[3, 1, 0], &|_| true), (vec![3, 1, 0], vec![]));
    }

    #[test]
    fn a_moved_tool_scores_no_higher_than_its_replacement() {
        let r = edges(&[(0, 2)]);
        let mut ranked = vec![(0, 0.99), (1, 0.95), (2, 0.94), (3, 0.5)];
        r.demote(&mut ranked, &|_| true);
        assert_eq!(ranked, [(1, 0.95), (2, 0.94), (0, 0.94), (3, 0.5)]);
    }

    #[test]
    fn a_missing_replacement_is_inserted_above_unless_filtered_out() {
        let r = edges(&[(0, 3)]);
        assert_eq!(run(&r, &[1, 0, 2], &|_| true), (vec![1, 3, 0, 2], vec![3]));
        assert_eq!(run(&r, &[1, 0, 2], &|o| o != 3), (vec![1, 0, 2], vec![]));
    }

    #[test]
    fn chains_end_in_order_and_cycles_are_left_alone() {
        // 0 → 1 → 2: 2, then 1, then 0.
        let r = edges(&[(0, 1), (1, 2)]);
        assert_eq!(run(&r, &[0, 1, 2], &|_| true).0, vec![2, 1, 0]);
        assert_eq!(run(&r, &[0, 5], &|_| true).0, vec![2, 1, 0, 5]);
        // 0 ↔ 1: no edge survives; 2 → 0 still holds.
        let r = edges(&[(0, 1), (1, 0), (2, 0)]);
        assert_eq!(run(&r, &[1, 2, 0], &|_| true).0, vec![1, 0, 2]);
    }
}
