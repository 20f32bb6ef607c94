//! `include/edgert.h` is what cbindgen generates from the crate now: regenerate it with
//! `EDGERT_BLESS=1 cargo test -p edgert-capi --test header` after changing the C ABI.

use std::path::Path;

#[test]
fn header_is_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    // `with_src` parses the sources (following `mod` items) without running `cargo metadata`.
    let bindings = cbindgen::Builder::new()
        .with_src(dir.join("src/lib.rs"))
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let path = dir.join("include/edgert.h");
    if std::env::var_os("EDGERT_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("writing the header");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    if committed != fresh {
        let (a, b) = (String::from_utf8_lossy(&committed), String::from_utf8_lossy(&fresh));
        let line =
            a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(a.lines().count().min(b.lines().count()));
        panic!(
            "{} is stale (first difference at line {}: committed `{}`, generated `{}`): run \
             EDGERT_BLESS=1 cargo test -p edgert-capi --test header and commit it",
            path.display(),
            line + 1,
            a.lines().nth(line).unwrap_or("<end>"),
            b.lines().nth(line).unwrap_or("<end>")
        );
    }
    // Every exported function made it into the header.
    let text = String::from_utf8_lossy(&fresh);
    for f in ["edgert_engine_build", "edgert_context_run", "edgert_batcher_infer", "edgert_last_error"] {
        assert!(text.contains(&format!("{f}(")), "{f} missing from the header");
    }
}
