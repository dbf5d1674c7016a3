//! The `[index]` settings (build settings, recorded in the manifest) and their checks.

use super::lexical::FieldBoosts;
use toolrag_core::error::Result;
use toolrag_core::settings::{check_float, invalid};

/// Build settings: the `[index]` table, read by `toolrag index`. What the
/// build used is recorded in the index's manifest, so queries score with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
#[non_exhaustive]
pub struct IndexConfig {
    /// BM25 field boosts (`[index] boosts = { name = 0.5, ... }`); `None`
    /// builds with [`FieldBoosts::default`]. Each boost is finite and at
    /// least 0, and at least one is above 0. Changing them needs a rebuild.
    pub boosts: Option<FieldBoosts>,
}

impl IndexConfig {
    /// Checks the boosts: each finite and at least 0, and at least one above
    /// 0 (with none, BM25 would search no field).
    pub fn validate(&self) -> Result<()> {
        let Some(b) = &self.boosts else {
            return Ok(());
        };
        let all = [
            ("name", b.name),
            ("summary", b.summary),
            ("description", b.description),
            ("params", b.params),
            ("examples", b.examples),
            ("tags", b.tags),
            ("namespace", b.namespace),
            ("all", b.all),
        ];
        for (field, v) in all {
            let key = format!("index.boosts.{field}");
            check_float(&key, v, |v| v >= 0.0, "a finite number of at least 0")?;
        }
        if all.iter().all(|(_, v)| *v == 0.0) {
            return Err(invalid(
                "index.boosts",
                "`index.boosts`: at least one boost must be above 0".into(),
            ));
        }
        Ok(())
    }
}
