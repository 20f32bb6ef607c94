//! Reading a pipeline's bus: the first error waiting there, or the wait for the end of
//! the stream. Messages name the element that raised the error.

use gst::prelude::*;
use gstreamer as gst;

/// `element path: error (debug)`.
fn describe(e: &gst::message::Error) -> String {
    let from = e.src().map(|s| s.path_string().to_string()).unwrap_or_default();
    let debug = e.debug().map(|d| format!(" ({d})")).unwrap_or_default();
    format!("{from}: {}{debug}", e.error())
}

/// The first error message waiting on `bus`, without blocking.
pub(crate) fn bus_error(bus: &gst::Bus) -> Option<String> {
    while let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error]) {
        if let gst::MessageView::Error(e) = msg.view() {
            return Some(describe(e));
        }
    }
    None
}

/// Blocks until the end of the stream (`Ok`), an error, or `timeout` (`None`: forever).
pub(crate) fn wait_for_eos(bus: &gst::Bus, timeout: Option<gst::ClockTime>) -> Result<(), String> {
    for msg in bus.iter_timed(timeout) {
        match msg.view() {
            gst::MessageView::Eos(_) => return Ok(()),
            gst::MessageView::Error(e) => return Err(describe(e)),
            _ => {}
        }
    }
    Err(match timeout {
        Some(t) => format!("no end of stream within {t}"),
        None => "the bus closed before the end of the stream".into(),
    })
}
