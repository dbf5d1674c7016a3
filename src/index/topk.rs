//! Top-k selection shared by the query-time algorithms: [`top`] picks the
//! best `limit` of a scored list, [`Best`] keeps the best `k` of a stream
//! without storing every score.
//!
//! One place for "the best k", so that the dense scans and (later) the
//! impact search's k-th-largest share their tie-breaking rules.

/// The best `k` scores seen so far, kept without storing every score: items
/// below the running floor are dropped at once, and the list is cut back to
/// `k` whenever it doubles. A scan of n points then costs n comparisons
/// instead of n pushes and a selection over n.
pub(crate) struct Best {
    k: usize,
    items: Vec<(usize, f32)>,
    floor: f32,
}

impl Best {
    /// An empty selection of the best `k` (at least one).
    pub(crate) fn new(k: usize) -> Best {
        Best {
            k: k.max(1),
            items: Vec::with_capacity(2 * k.max(1)),
            floor: f32::NEG_INFINITY,
        }
    }

    /// Offers item `i` with `score`.
    pub(crate) fn push(&mut self, i: usize, score: f32) {
        if score < self.floor {
            return;
        }
        self.items.push((i, score));
        if self.items.len() >= 2 * self.k {
            self.items = top(std::mem::take(&mut self.items), self.k);
            self.floor = self.items.last().map_or(f32::NEG_INFINITY, |x| x.1);
            self.items.reserve(self.k);
        }
    }

    /// The items kept, in no particular order (at least the best `k`, at most
    /// twice as many); pass them to [`top`] for the final cut.
    pub(crate) fn into_items(self) -> Vec<(usize, f32)> {
        self.items
    }
}

/// The best `limit` of `scored`, best first (ties by id).
pub(crate) fn top(mut scored: Vec<(usize, f32)>, limit: usize) -> Vec<(usize, f32)> {
    let by_score = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit, by_score);
        scored.truncate(limit);
    }
    scored.sort_by(by_score);
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_keeps_the_top_k_of_a_stream_in_the_order_top_gives() {
        let scores: Vec<f32> = (0..1000)
            .map(|i| ((i * 7919) % 1000) as f32 / 10.0)
            .collect();
        let mut best = Best::new(10);
        for (i, s) in scores.iter().enumerate() {
            best.push(i, *s);
        }
        let all: Vec<(usize, f32)> = scores.iter().copied().enumerate().collect();
        assert_eq!(top(best.into_items(), 10), top(all.clone(), 10));
        let t = top(all, 3);
        assert_eq!(t.len(), 3);
        assert!(t.windows(2).all(|w| w[0].1 >= w[1].1));
        // Ties go to the smaller id.
        assert_eq!(
            top(vec![(5, 1.0), (2, 1.0), (9, 0.5)], 2),
            [(2, 1.0), (5, 1.0)]
        );
    }
}
