//! Bounded waits: every await at startup has a deadline, so a wedged browser API turns into an
//! error instead of a store that never opens.

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::task::Poll;

use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::error::{Error, Result};

#[wasm_bindgen]
extern "C" {
    /// The global `setTimeout`, present in windows and workers alike.
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(handler: &Function, ms: i32) -> JsValue;
}

/// Resolves after `ms` milliseconds.
pub(super) async fn sleep(ms: i32) {
    let _ = JsFuture::from(timer(ms)).await;
}

fn timer(ms: i32) -> Promise {
    Promise::new(&mut |resolve, _reject| {
        set_timeout(&resolve, ms);
    })
}

/// Runs `future` for at most `ms` milliseconds. Past the deadline the future is dropped and
/// the wait is [`Error::Busy`]: a browser that does not answer is most often blocked on OPFS
/// handles another context still holds.
pub(super) async fn within<T>(ms: i32, what: &str, future: impl Future<Output = T>) -> Result<T> {
    let mut future = pin!(future);
    let mut deadline = JsFuture::from(timer(ms));
    poll_fn(|cx| {
        if let Poll::Ready(value) = future.as_mut().poll(cx) {
            return Poll::Ready(Ok(value));
        }
        if std::pin::Pin::new(&mut deadline).poll(cx).is_ready() {
            return Poll::Ready(Err(Error::Busy {
                message: format!("{what} did not finish within {ms} ms"),
            }));
        }
        Poll::Pending
    })
    .await
}
