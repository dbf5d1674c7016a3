//! `toolrag.toml` as the command line reads it: the library's tables, read
//! and checked by the library's one loader ([`toolrag::config::Config`]), and
//! the `[gateway]` table, typed here as the gateway's settings
//! ([`GatewayConfig`]): the gateway is above the library. Every command loads
//! the file this way, so a bad gateway value is refused by every command.

use std::ops::Deref;
use std::path::Path;

use toolrag::config::relative_to_file;
use toolrag_gateway::GatewayConfig;

/// A whole `toolrag.toml`: the library's [`toolrag::config::Config`] (its
/// fields read through `Deref`) and the gateway's settings.
#[derive(Debug, Clone, Default)]
pub struct Config {
    library: toolrag::config::Config,
    /// The `[gateway]` table, typed and checked; its relative paths made
    /// relative to the file's folder.
    pub gateway: GatewayConfig,
}

impl Config {
    /// Reads `path`, or `./toolrag.toml` when it exists, or gives the
    /// defaults ([`toolrag::config::Config::load`]), then types `[gateway]`.
    pub fn load(path: Option<&Path>) -> toolrag::Result<Config> {
        Config::typed(toolrag::config::Config::load(path)?)
    }

    /// Parses the text of a `toolrag.toml` (errors give the line, no file).
    #[cfg(test)]
    pub fn parse(text: &str) -> toolrag::Result<Config> {
        Config::typed(toolrag::config::Config::parse(text)?)
    }

    fn typed(library: toolrag::config::Config) -> toolrag::Result<Config> {
        let gateway = library.gateway(|g: &mut GatewayConfig, file| {
            if let Some(file) = file {
                for p in [
                    &mut g.lock_file,
                    &mut g.audit_log,
                    &mut g.key_file,
                    &mut g.approvals_db,
                    &mut g.usage_log,
                ]
                .into_iter()
                .flatten()
                {
                    *p = relative_to_file(file, p);
                }
            }
            g.validate()
        })?;
        Ok(Config { library, gateway })
    }
}

impl Deref for Config {
    type Target = toolrag::config::Config;

    fn deref(&self) -> &toolrag::config::Config {
        &self.library
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolrag::config::ConfigError;
    use toolrag::config::GATEWAY_KEYS;
    use toolrag::Error;
    use toolrag_gateway::OutputGuard;

    fn err(text: &str) -> ConfigError {
        match Config::parse(text) {
            Err(Error::Config(e)) => e,
            Err(other) => panic!("not a config error: {other}"),
            Ok(c) => panic!("accepted: {c:?}"),
        }
    }

    #[test]
    fn gateway_paths_are_relative_to_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolrag.toml");
        std::fs::write(&path, "[gateway]\nlock-file = \"gw.lock.json\"\n").unwrap();
        let c = Config::load(Some(&path)).unwrap();
        assert_eq!(c.gateway.lock_file, Some(dir.path().join("gw.lock.json")));
        std::fs::write(&path, "\n[gateway]\nrelist-seconds = -1\n").unwrap();
        let e = Config::load(Some(&path)).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:3: ", path.display())), "{e}");
    }

    #[test]
    fn the_gateway_table_is_read_and_checked() {
        let c = Config::parse(
                "[gateway]\nallow = [\"memory\", \"fs/write_file\"]\noutput-guard = \"block\"\nrelist-seconds = 0\n",
            )
            .unwrap();
        assert_eq!(c.gateway.output_guard, OutputGuard::Block);
        assert_eq!(c.gateway.relist_seconds, 0.0);
        assert_eq!(
            c.gateway.allow_entry("memory/create_entities"),
            Some("memory")
        );
        assert_eq!(
            c.gateway.allow_entry("fs/write_file"),
            Some("fs/write_file")
        );
        assert_eq!(c.gateway.allow_entry("fs/move_file"), None);
        let e = err("[gateway]\nrelist-seconds = -1\n");
        assert_eq!(e.key.as_deref(), Some("gateway.relist-seconds"), "{e}");
        assert_eq!(e.line, Some(2));
        let e = err("[gateway]\noutput-guard = \"loud\"\n");
        assert_eq!(e.key.as_deref(), Some("gateway.output-guard"), "{e}");
        let e = err("[gateway]\nallowed = []\n");
        assert!(e.message.contains("did you mean `allow`?"), "{e}");
        let keys = |v: serde_json::Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let mut want: Vec<String> = GATEWAY_KEYS.iter().map(|k| k.to_string()).collect();
        want.sort();
        let mut full = GatewayConfig::default();
        full.lock_file = Some("a".into());
        full.audit_log = Some("b".into());
        full.key_file = Some("c".into());
        full.approvals_db = Some("d".into());
        full.usage_log = Some("e".into());
        full.state = Some(toolrag_gateway::settings::StateUrl::new("redis://r:6379/0"));
        full.state_password_env = Some("F".into());
        assert_eq!(keys(serde_json::to_value(full).unwrap()), want);
    }

    /// `[gateway] state` takes a Redis URL; anything else is refused naming
    /// the setting, and the password never shows in a message or in `Debug`.
    #[test]
    fn the_shared_state_url_is_read_and_checked() {
        let c = Config::parse(
            "[gateway]\nstate = \"rediss://gw:s3cret@redis.internal:6380/2\"\nstate-prefix = \"prod:\"\n",
        )
        .unwrap();
        let url = c.gateway.state.as_ref().unwrap();
        assert!(url.is_tls());
        assert_eq!(url.redacted(), "rediss://gw:***@redis.internal:6380/2");
        assert!(!format!("{:?}", c.gateway).contains("s3cret"));
        assert_eq!(c.gateway.state_prefix, "prod:");
        assert_eq!(c.gateway.state_timeout_seconds, 1.0);
        for (text, key) in [
            ("state = \"http://:pw-is-hidden@h:1/0\"", "gateway.state"),
            ("state = \"redis://\"", "gateway.state"),
            ("state = \"redis://h:notaport/0\"", "gateway.state"),
            ("state-prefix = \"\"", "gateway.state-prefix"),
            ("state-timeout-seconds = 0", "gateway.state-timeout-seconds"),
            ("state-password-env = \"\"", "gateway.state-password-env"),
        ] {
            let e = err(&format!("[gateway]\n{text}\n"));
            assert_eq!(e.key.as_deref(), Some(key), "{text}: {e}");
            assert!(!e.to_string().contains("pw-is-hidden"), "{e}");
        }
    }

    #[test]
    fn the_session_caps_are_read_and_checked() {
        let c = Config::parse(
            "[gateway]\nmax-sessions = 50\nmax-sessions-per-principal = 5\nsession-idle-seconds = 90\n",
        )
        .unwrap();
        let limits = c.gateway.session_limits();
        assert_eq!(limits.max_total, 50);
        assert_eq!(limits.max_per_principal, 5);
        assert_eq!(limits.idle, std::time::Duration::from_secs(90));
        let d = GatewayConfig::default().session_limits();
        assert_eq!((d.max_total, d.max_per_principal), (10_000, 100));
        assert_eq!(d.idle, std::time::Duration::from_secs(1_800));
        for (text, key) in [
            ("max-sessions = 0", "gateway.max-sessions"),
            (
                "max-sessions-per-principal = 0",
                "gateway.max-sessions-per-principal",
            ),
            ("session-idle-seconds = 0.5", "gateway.session-idle-seconds"),
            ("session-idle-seconds = nan", "gateway.session-idle-seconds"),
        ] {
            let e = err(&format!("[gateway]\n{text}\n"));
            assert_eq!(e.key.as_deref(), Some(key), "{text}: {e}");
        }
    }
}
