//! The library's log lines handed to a C callback (feature `uploader`): `ldp_set_log_callback` installs the `log`
//! facade's logger that calls it.
//!
//! Every item carries `#[cfg(feature = "uploader")]` itself, as in `blocking_upload.rs`.

use std::ffi::{c_char, CString};

use super::last_error::guard;
use super::marshal::invalid;
use super::LdpStatus;
use crate::error::Error;

/// Receives one log line of the library (the `uploader` feature): `level` 1 error, 2 warn, 3 info, 4 debug, 5 trace;
/// `line` a NUL-terminated UTF-8 string valid during the call only; `user` the pointer given to
/// `ldp_set_log_callback`.
#[cfg(feature = "uploader")]
pub type LdpLogCallback =
    Option<unsafe extern "C" fn(user: *mut std::ffi::c_void, level: std::ffi::c_int, line: *const c_char)>;

/// The `log` facade's logger that hands the library's lines to a C callback.
#[cfg(feature = "uploader")]
struct CallbackLogger {
    callback: unsafe extern "C" fn(*mut std::ffi::c_void, std::ffi::c_int, *const c_char),
    /// The caller's pointer, kept as an integer: the caller promised it may be used from any thread.
    user: usize,
    max: log::LevelFilter,
}

#[cfg(feature = "uploader")]
impl log::Log for CallbackLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= self.max && metadata.target().starts_with("ldp_client")
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            let text = record.args().to_string().replace('\0', "\u{fffd}");
            if let Ok(line) = CString::new(text) {
                // SAFETY: the caller of `ldp_set_log_callback` promised a callback callable from any thread with
                // its `user` pointer; `line` outlives the call.
                unsafe {
                    (self.callback)(
                        self.user as *mut std::ffi::c_void,
                        record.level() as std::ffi::c_int,
                        line.as_ptr(),
                    )
                };
            }
        }
    }

    fn flush(&self) {}
}

/// Sends the library's log lines to `callback` (the `uploader` feature): the uploader's failovers, waits and stops
/// at level 3 (info) and 2 (warn), each request at 4 (debug); never a report line or the token. `max_level` (0 to
/// 5: 0 none, 1 error … 5 trace) is the most detailed level passed on. The callback runs on the thread that logs
/// (the one calling `ldp_client_upload`), so `callback` and `user` must be usable from any thread that uploads.
///
/// Once per process: the library logs through Rust's `log` facade, which takes one logger, so a second call (or a
/// process whose Rust code installed its own logger, which then receives the lines instead) is `LDP_VALUE_ERROR`.
/// A null callback or a level outside 0 to 5 is refused (`LDP_INVALID_ARGUMENT`, `LDP_VALUE_ERROR`) and installs
/// nothing.
///
/// # Safety
/// `callback` must be safe to call from any thread with `user`, for the rest of the process.
#[cfg(feature = "uploader")]
#[no_mangle]
pub unsafe extern "C" fn ldp_set_log_callback(
    callback: LdpLogCallback,
    user: *mut std::ffi::c_void,
    max_level: std::ffi::c_int,
) -> LdpStatus {
    guard(|| {
        let callback = callback.ok_or_else(|| invalid("callback is a null pointer"))?;
        let max = match max_level {
            0 => log::LevelFilter::Off,
            1 => log::LevelFilter::Error,
            2 => log::LevelFilter::Warn,
            3 => log::LevelFilter::Info,
            4 => log::LevelFilter::Debug,
            5 => log::LevelFilter::Trace,
            other => return Err(Error::Value(format!("max_level must be 0 (none) to 5 (trace), got {other}"))),
        };
        let logger = Box::new(CallbackLogger { callback, user: user as usize, max });
        log::set_logger(Box::leak(logger)).map_err(|_| {
            Error::Value("a logger is already installed in this process (ldp_set_log_callback works once)".into())
        })?;
        log::set_max_level(max);
        Ok(())
    })
}
