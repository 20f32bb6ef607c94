//! Actions: a TOML config maps keywords to what to do when they fire.
//!
//! ```toml
//! [[keyword]]
//! name = "lights on"          # a keyword the heads know
//! threshold = 0.6             # optional: overrides the head's threshold
//! cooldown_ms = 5000          # optional: ignore the keyword this long after its action ran
//! action = { type = "command", argv = ["/usr/bin/lightctl", "on"], timeout_ms = 2000 }
//!
//! [[keyword]]
//! name = "hey edge"
//! action = { type = "print" } # a JSON event on stdout
//! ```
//!
//! Commands run without a shell (argv), and are killed at their timeout. Not yet: HTTP POST
//! and GPIO actions (a config naming them is an error that says so).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde::Deserialize;

use crate::kws::Detection;

/// The config file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// One entry per keyword.
    #[serde(rename = "keyword")]
    pub keywords: Vec<KeywordAction>,
}

/// What one keyword does.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeywordAction {
    /// The keyword.
    pub name: String,
    /// Score threshold overriding the head's.
    pub threshold: Option<f32>,
    /// Quiet period after the action ran, in ms.
    #[serde(default)]
    pub cooldown_ms: u64,
    /// The action.
    pub action: Action,
}

/// An action.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Action {
    /// Run a program (no shell), killed after `timeout_ms`.
    Command {
        /// Program and arguments.
        argv: Vec<String>,
        /// Kill it after this long.
        #[serde(default = "default_timeout")]
        timeout_ms: u64,
    },
    /// Print the detection as a JSON event on stdout.
    Print,
}

fn default_timeout() -> u64 {
    5000
}

/// How an action ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Printed.
    Printed,
    /// The command exited with this code.
    Exited(Option<i32>),
    /// The command ran past its timeout and was killed.
    Killed,
    /// Skipped: the keyword is cooling down.
    CoolingDown,
}

impl Config {
    /// Parses a config; errors name the line and column (TOML's messages do) and unknown
    /// keywords.
    pub fn parse(text: &str, known: &[&str]) -> Result<Config> {
        let c: Config = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        for k in &c.keywords {
            if !known.contains(&k.name.as_str()) {
                bail!("keyword `{}` has no head (known: {known:?})", k.name);
            }
            if let Action::Command { argv, .. } = &k.action
                && argv.is_empty()
            {
                bail!("keyword `{}`: a command action needs a non-empty argv", k.name);
            }
        }
        Ok(c)
    }

    /// Reads and parses a config file.
    pub fn load(path: &Path, known: &[&str]) -> Result<Config> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Config::parse(&text, known).with_context(|| format!("{}", path.display()))
    }
}

/// Runs configured actions, honouring cool-downs.
pub struct Runner {
    config: Config,
    last_run: Vec<Option<u64>>,
}

impl Runner {
    /// A runner for `config`.
    pub fn new(config: Config) -> Runner {
        let n = config.keywords.len();
        Runner { config, last_run: vec![None; n] }
    }

    /// The threshold the config sets for a keyword, if any.
    pub fn threshold(&self, keyword: &str) -> Option<f32> {
        self.config.keywords.iter().find(|k| k.name == keyword).and_then(|k| k.threshold)
    }

    /// Runs the action for a detection (if the keyword is configured and over its
    /// threshold). Logs every trigger on stderr with time, keyword and score.
    pub fn handle(&mut self, d: &Detection) -> Result<Option<Outcome>> {
        let Some(i) = self.config.keywords.iter().position(|k| k.name == d.keyword) else { return Ok(None) };
        let k = &self.config.keywords[i];
        if k.threshold.is_some_and(|t| d.score < t) {
            return Ok(None);
        }
        eprintln!("trigger t_ms={} keyword={:?} score={:.3}", d.t_ms, d.keyword, d.score);
        if self.last_run[i].is_some_and(|t| d.t_ms.saturating_sub(t) < k.cooldown_ms) {
            return Ok(Some(Outcome::CoolingDown));
        }
        self.last_run[i] = Some(d.t_ms);
        Ok(Some(match &k.action {
            Action::Print => {
                println!(
                    "{}",
                    serde_json::json!({"event": "keyword", "keyword": d.keyword, "score": d.score, "t_ms": d.t_ms})
                );
                Outcome::Printed
            }
            Action::Command { argv, timeout_ms } => run_with_timeout(argv, Duration::from_millis(*timeout_ms))?,
        }))
    }
}

/// Runs `argv` (no shell) and kills it after `timeout`.
pub fn run_with_timeout(argv: &[String], timeout: Duration) -> Result<Outcome> {
    let (prog, args) = argv.split_first().context("empty argv")?;
    let mut child =
        Command::new(prog).args(args).stdin(Stdio::null()).spawn().with_context(|| format!("starting `{prog}`"))?;
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Outcome::Exited(status.code()));
        }
        if start.elapsed() >= timeout {
            child.kill().ok();
            child.wait().ok();
            eprintln!("action `{prog}` ran past {} ms: killed", timeout.as_millis());
            return Ok(Outcome::Killed);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = &["lights on", "hey edge"];

    fn det(k: &str, t_ms: u64) -> Detection {
        Detection { keyword: k.into(), score: 0.9, t_ms }
    }

    #[test]
    fn a_hanging_action_is_killed_at_its_timeout() {
        let cfg = Config::parse(
            "[[keyword]]\nname = \"lights on\"\naction = { type = \"command\", argv = [\"sleep\", \"30\"], timeout_ms = 300 }\n",
            KNOWN,
        )
        .unwrap();
        let t0 = Instant::now();
        let out = Runner::new(cfg).handle(&det("lights on", 1000)).unwrap();
        assert_eq!(out, Some(Outcome::Killed));
        assert!(t0.elapsed() < Duration::from_secs(5), "took {:?}", t0.elapsed());
    }

    #[test]
    fn commands_run_and_cool_down() {
        let cfg = Config::parse(
            "[[keyword]]\nname = \"hey edge\"\ncooldown_ms = 2000\naction = { type = \"command\", argv = [\"true\"] }\n",
            KNOWN,
        )
        .unwrap();
        let mut r = Runner::new(cfg);
        assert_eq!(r.handle(&det("hey edge", 1000)).unwrap(), Some(Outcome::Exited(Some(0))));
        assert_eq!(r.handle(&det("hey edge", 2500)).unwrap(), Some(Outcome::CoolingDown));
        assert_eq!(r.handle(&det("hey edge", 3100)).unwrap(), Some(Outcome::Exited(Some(0))));
        assert_eq!(r.handle(&det("lights on", 3100)).unwrap(), None);
    }

    #[test]
    fn a_bad_config_is_an_error_naming_the_line() {
        let text = "[[keyword]]\nname = \"lights on\"\naction = { type = \"print\" }\n\n[[keyword]]\nname = \"hey edge\"\nthreshold = \"high\"\naction = { type = \"print\" }\n";
        let e = format!("{:#}", Config::parse(text, KNOWN).unwrap_err());
        assert!(e.contains("line 7"), "{e}");
        let e = format!(
            "{:#}",
            Config::parse("[[keyword]]\nname = \"open sesame\"\naction = { type = \"print\" }\n", KNOWN).unwrap_err()
        );
        assert!(e.contains("open sesame"), "{e}");
        let e = format!(
            "{:#}",
            Config::parse("[[keyword]]\nname = \"hey edge\"\naction = { type = \"http\", url = \"x\" }\n", KNOWN)
                .unwrap_err()
        );
        assert!(e.contains("line 3"), "{e}");
    }
}
