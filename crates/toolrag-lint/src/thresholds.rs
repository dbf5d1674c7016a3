//! The numbers the rules compare against (`[lint.thresholds]`), and their checks.

use serde::Deserialize;
use toolrag_core::error::Result;
use toolrag_core::settings::{check_float, check_int};

/// Numbers the rules compare against; [`Thresholds::validate`] checks their
/// ranges.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct Thresholds {
    /// `missing-examples`: the fewest examples a tool may have.
    pub min_examples: usize,
    /// `missing-edge-cases`: the fewest edge cases (with a behaviour).
    pub min_edge_cases: usize,
    /// `vague-description`: the fewest words a description may have.
    pub min_description_words: usize,
    /// `oversized-description`: the most tokens a description may have.
    pub max_description_tokens: usize,
    /// `confusable-tools`: the dense cosine from which two tools are confusable.
    pub confusable_dense: f32,
    /// `confusable-tools`: the TF-IDF cosine from which two tools are confusable.
    pub confusable_lexical: f32,
    /// `hidden-instructions`: the shortest base64 run reported as a blob.
    pub base64_min_length: usize,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            min_examples: 1,
            min_edge_cases: 1,
            min_description_words: 6,
            max_description_tokens: 400,
            confusable_dense: 0.8,
            confusable_lexical: 0.5,
            base64_min_length: 40,
        }
    }
}

/// The most `min-examples` and `min-edge-cases`.
const MAX_MIN_COUNT: usize = 100;
/// The most `min-description-words`.
const MAX_MIN_WORDS: usize = 1_000;
/// The range of `max-description-tokens`.
const DESCRIPTION_TOKENS: std::ops::RangeInclusive<usize> = 1..=100_000;
/// The range of `base64-min-length`: shorter runs are ordinary words.
const BASE64_LENGTH: std::ops::RangeInclusive<usize> = 8..=100_000;

impl Thresholds {
    /// Checks every threshold: `min-examples` and `min-edge-cases` up to 100,
    /// `min-description-words` up to 1,000, `max-description-tokens` from 1
    /// to 100,000, `base64-min-length` from 8 to 100,000, and
    /// `confusable-dense` and `confusable-lexical` finite in [0, 1] (cosines).
    pub fn validate(&self) -> Result<()> {
        let t = "lint.thresholds";
        check_int(
            &format!("{t}.min-examples"),
            self.min_examples,
            0..=MAX_MIN_COUNT,
        )?;
        check_int(
            &format!("{t}.min-edge-cases"),
            self.min_edge_cases,
            0..=MAX_MIN_COUNT,
        )?;
        check_int(
            &format!("{t}.min-description-words"),
            self.min_description_words,
            0..=MAX_MIN_WORDS,
        )?;
        check_int(
            &format!("{t}.max-description-tokens"),
            self.max_description_tokens,
            DESCRIPTION_TOKENS,
        )?;
        check_int(
            &format!("{t}.base64-min-length"),
            self.base64_min_length,
            BASE64_LENGTH,
        )?;
        for (key, v) in [
            ("confusable-dense", self.confusable_dense),
            ("confusable-lexical", self.confusable_lexical),
        ] {
            check_float(
                &format!("{t}.{key}"),
                v,
                |v| (0.0..=1.0).contains(&v),
                "a finite number from 0 to 1 (a cosine)",
            )?;
        }
        Ok(())
    }
}
