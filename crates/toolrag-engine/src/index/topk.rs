//! Top-k selection shared by the query-time algorithms: [`top`] picks the
//! best `limit` of a scored list, [`Best`] keeps the best `k` of a stream
//! without storing every score, [`kth_largest`] gives the impact search its
//! threshold, and [`by_score`] is the one order of every ranked list (score
//! descending, ties by id ascending): the dense scans, each retriever's list
//! and the fused list all sort with it.

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
            // Only the k-th best matters here, not the order of the others:
            // a selection, without the sort `top` would add.
            let k = self.k;
            self.items.select_nth_unstable_by(k - 1, by_score);
            self.items.truncate(k);
            self.floor = self.items[k - 1].1;
        }
    }

    /// The items kept, in no particular order (at least the best `k`, at most
    /// twice as many); pass them to [`top`] for the final cut.
    pub(crate) fn into_items(self) -> Vec<(usize, f32)> {
        self.items
    }
}

/// The order of every ranked list: the higher score first, ties by the
/// lower id.
pub(crate) fn by_score<T: Ord>(a: &(T, f32), b: &(T, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// The best `limit` of `scored`, best first (ties by id).
pub(crate) fn top<T: Ord>(mut scored: Vec<(T, f32)>, limit: usize) -> Vec<(T, f32)> {
    if scored.len() > limit {
        scored.select_nth_unstable_by(limit, by_score);
        scored.truncate(limit);
    }
    scored.sort_by(by_score);
    scored
}

/// The `limit`-th largest of `values` (0 when there are fewer), using
/// `buffer` as scratch space so that a query allocates it once.
pub(crate) fn kth_largest(
    buffer: &mut Vec<u32>,
    values: impl Iterator<Item = u32>,
    limit: usize,
) -> u32 {
    buffer.clear();
    buffer.extend(values);
    if limit == 0 || buffer.len() < limit {
        return 0;
    }
    *buffer.select_nth_unstable_by(limit - 1, |a, b| b.cmp(a)).1
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
