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
//!
//! [[keyword]]
//! name = "lights off"
//! # POSTs {"event":"keyword","keyword":"lights off","score":…,"t_ms":…} (or `body`)
//! action = { type = "http", url = "http://192.168.1.20:8123/api/lights", timeout_ms = 2000,
//!            headers = { Authorization = "Bearer …" } }
//! ```
//!
//! Commands run without a shell (argv), and are killed at their timeout. HTTP actions speak
//! plain HTTP/1.1 over std's TCP (no TLS: `https://` is a config error; run `curl` as a
//! command for that); a failed or timed-out request is logged and the app keeps listening.
//! Not yet: GPIO actions (a config naming them is an error that says so).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
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
    /// POST to an `http://` URL: the JSON event, or `body`.
    Http {
        /// `http://host[:port]/path`.
        url: String,
        /// Give up (connect, send and status line) after this long.
        #[serde(default = "default_timeout")]
        timeout_ms: u64,
        /// Extra request headers.
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// Body to send instead of the JSON event (sent as is, Content-Type from `headers`
        /// or application/json).
        body: Option<String>,
    },
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
    /// The HTTP server answered with this status.
    Http(u16),
    /// The HTTP request failed (connection, timeout, a malformed answer): why.
    Failed(String),
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
            if let Action::Http { url, headers, .. } = &k.action {
                parse_http_url(url).with_context(|| format!("keyword `{}`", k.name))?;
                if let Some(h) = headers.iter().find(|(n, v)| !valid_header(n, v)) {
                    bail!(
                        "keyword `{}`: header `{}` has a character HTTP doesn't allow (CR, LF, or ':' in the name)",
                        k.name,
                        h.0
                    );
                }
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
            Action::Http { url, timeout_ms, headers, body } => {
                let event =
                    serde_json::json!({"event": "keyword", "keyword": d.keyword, "score": d.score, "t_ms": d.t_ms});
                let body = body.clone().unwrap_or_else(|| event.to_string());
                match http_post(url, headers, &body, Duration::from_millis(*timeout_ms)) {
                    Ok(status) => {
                        if !(200..300).contains(&status) {
                            eprintln!("action POST {url}: HTTP {status}");
                        }
                        Outcome::Http(status)
                    }
                    Err(e) => {
                        eprintln!("action POST {url} failed: {e:#}");
                        Outcome::Failed(format!("{e:#}"))
                    }
                }
            }
        }))
    }
}

fn valid_header(name: &str, value: &str) -> bool {
    !name.is_empty() && !name.contains([':', '\r', '\n']) && !value.contains(['\r', '\n'])
}

/// `http://host[:port]/path` → (host, port, path). `https://` is an error (no TLS here).
pub fn parse_http_url(url: &str) -> Result<(String, u16, String)> {
    if url.starts_with("https://") {
        bail!(
            "`{url}`: https needs TLS, which voice-actions doesn't include; POST to an http:// endpoint \
             (e.g. on the local network) or use a command action running curl"
        );
    }
    let Some(rest) = url.strip_prefix("http://") else {
        bail!("`{url}` is not an http:// URL");
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let Some((h, after)) = v6.split_once(']') else { bail!("`{url}`: unclosed [ in the host") };
        (h.to_string(), after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        bail!("`{url}` has no host");
    }
    let port = match port {
        Some(p) => p.parse::<u16>().with_context(|| format!("`{url}`: port `{p}` is not a number 0-65535"))?,
        None => 80,
    };
    if path.contains([' ', '\r', '\n']) {
        bail!("`{url}`: the path has a space or line break (percent-encode it)");
    }
    Ok((host, port, path.to_string()))
}

/// POSTs `body` to `url` over HTTP/1.1 and returns the status code; everything (connect,
/// send, the status line) within `timeout`.
pub fn http_post(url: &str, headers: &BTreeMap<String, String>, body: &str, timeout: Duration) -> Result<u16> {
    let (host, port, path) = parse_http_url(url)?;
    let start = Instant::now();
    let left = || timeout.saturating_sub(start.elapsed()).max(Duration::from_millis(1));
    let addrs: Vec<_> = (host.as_str(), port).to_socket_addrs().with_context(|| format!("resolving {host}"))?.collect();
    let mut last_err = None;
    let mut stream = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, left()) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last_err = Some(e),
        }
    }
    let Some(mut stream) = stream else {
        return Err(match last_err {
            Some(e) => anyhow::Error::new(e).context(format!("connecting to {host}:{port}")),
            None => anyhow::anyhow!("{host} resolved to no address"),
        });
    };
    stream.set_write_timeout(Some(left()))?;
    let host_header = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    let mut req = format!("POST {path} HTTP/1.1\r\nHost: {host_header}\r\nUser-Agent: edgert-voice-actions\r\n");
    if !headers.keys().any(|k| k.eq_ignore_ascii_case("content-type")) {
        req += "Content-Type: application/json\r\n";
    }
    for (k, v) in headers {
        req += &format!("{k}: {v}\r\n");
    }
    req += &format!("Content-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    stream.write_all(req.as_bytes()).and_then(|_| stream.write_all(body.as_bytes())).context("sending the request")?;
    // The status line is all we need.
    let mut got = Vec::with_capacity(256);
    let mut buf = [0u8; 256];
    while !got.windows(2).any(|w| w == b"\r\n") {
        stream.set_read_timeout(Some(left()))?;
        let n = stream
            .read(&mut buf)
            .with_context(|| format!("waiting for the answer ({} ms timeout)", timeout.as_millis()))?;
        if n == 0 || got.len() > 8192 {
            bail!("the server closed the connection without an HTTP status line");
        }
        got.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&got);
    let status = line
        .strip_prefix("HTTP/1.")
        .and_then(|r| r.get(2..5))
        .and_then(|c| c.parse::<u16>().ok())
        .with_context(|| format!("not an HTTP status line: {:?}", line.lines().next().unwrap_or_default()))?;
    Ok(status)
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
            Config::parse("[[keyword]]\nname = \"hey edge\"\naction = { type = \"gpio\", line = 17 }\n", KNOWN)
                .unwrap_err()
        );
        assert!(e.contains("line 3"), "{e}");
        for (url, says) in [("x", "not an http:// URL"), ("https://h/x", "curl"), ("http://h:99999/", "port")] {
            let text = format!("[[keyword]]\nname = \"hey edge\"\naction = {{ type = \"http\", url = \"{url}\" }}\n");
            let e = format!("{:#}", Config::parse(&text, KNOWN).unwrap_err());
            assert!(e.contains(says) && e.contains("hey edge"), "{url}: {e}");
        }
    }

    #[test]
    fn urls_parse() {
        assert_eq!(
            parse_http_url("http://10.0.0.2:8123/api/x?a=1").unwrap(),
            ("10.0.0.2".into(), 8123, "/api/x?a=1".into())
        );
        assert_eq!(parse_http_url("http://hub.local").unwrap(), ("hub.local".into(), 80, "/".into()));
        assert_eq!(parse_http_url("http://[::1]:9000/p").unwrap(), ("::1".into(), 9000, "/p".into()));
    }

    /// A one-shot HTTP server on 127.0.0.1: returns its URL and a handle giving the raw
    /// request it received.
    fn server(reply: &'static str) -> (String, std::thread::JoinHandle<String>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hooks/kws", l.local_addr().unwrap());
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut req = Vec::new();
            let mut buf = [0u8; 1024];
            // Headers, then Content-Length bytes of body.
            loop {
                let n = s.read(&mut buf).unwrap();
                req.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&req).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len: usize = text
                        .lines()
                        .find_map(|l| l.strip_prefix("Content-Length: "))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    if req.len() >= end + 4 + len || n == 0 {
                        break;
                    }
                }
                if n == 0 {
                    break;
                }
            }
            s.write_all(reply.as_bytes()).unwrap();
            String::from_utf8(req).unwrap()
        });
        (url, h)
    }

    #[test]
    fn http_action_posts_the_event() {
        let (url, h) = server("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
        let text = format!(
            "[[keyword]]\nname = \"lights on\"\naction = {{ type = \"http\", url = \"{url}\", headers = {{ X-Token = \"abc\" }} }}\n"
        );
        let mut r = Runner::new(Config::parse(&text, KNOWN).unwrap());
        assert_eq!(r.handle(&det("lights on", 4200)).unwrap(), Some(Outcome::Http(204)));
        let req = h.join().unwrap();
        assert!(req.starts_with("POST /hooks/kws HTTP/1.1\r\n"), "{req}");
        assert!(req.contains("\r\nX-Token: abc\r\n") && req.contains("Content-Type: application/json"), "{req}");
        let body = &req[req.find("\r\n\r\n").unwrap() + 4..];
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["keyword"], "lights on");
        assert_eq!(v["t_ms"], 4200);
    }

    #[test]
    fn http_errors_are_outcomes_not_crashes() {
        // A server error status is reported as is.
        let (url, h) = server("HTTP/1.0 500 Internal Server Error\r\n\r\n");
        let status = http_post(&url, &BTreeMap::new(), "{}", Duration::from_secs(5)).unwrap();
        assert_eq!(status, 500);
        h.join().unwrap();
        // Nobody listening: a failure naming the address.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let text = format!(
            "[[keyword]]\nname = \"hey edge\"\naction = {{ type = \"http\", url = \"http://127.0.0.1:{port}/\" }}\n"
        );
        let mut r = Runner::new(Config::parse(&text, KNOWN).unwrap());
        match r.handle(&det("hey edge", 1)).unwrap() {
            Some(Outcome::Failed(why)) => assert!(why.contains(&format!("127.0.0.1:{port}")), "{why}"),
            other => panic!("expected a failure, got {other:?}"),
        }
        // A server that accepts and never answers: timed out, within the timeout.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", l.local_addr().unwrap());
        let t0 = Instant::now();
        let e = http_post(&url, &BTreeMap::new(), "{}", Duration::from_millis(300)).unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(3), "took {:?}", t0.elapsed());
        assert!(format!("{e:#}").contains("300 ms"), "{e:#}");
        drop(l);
    }
}
