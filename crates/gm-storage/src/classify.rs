//! Turns object_store's errors into gm's failure kinds and HTTP statuses.

use std::error::Error as _;

use object_store::client::{HttpError, HttpErrorKind};

use crate::error::FailureKind;
use crate::fetch::Attempt;

/// Classifies `e`; `in_body` says whether the headers had already arrived.
pub(crate) fn classify(e: &object_store::Error, in_body: bool) -> Attempt {
    use object_store::Error as E;
    let status = status_of(e);
    let kind = match e {
        E::NotFound { .. } => FailureKind::NotFound,
        E::Precondition { .. } => FailureKind::Changed,
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => FailureKind::Denied,
        E::NotSupported { .. } | E::NotImplemented { .. } => FailureKind::Unsupported,
        _ if status.is_some() => FailureKind::Status,
        _ => match http_kind(e) {
            Some(HttpErrorKind::Timeout) => FailureKind::TimedOut,
            Some(HttpErrorKind::Connect) => FailureKind::Connection,
            Some(_) if in_body => FailureKind::ShortBody,
            Some(_) => FailureKind::Connection,
            None if in_body => FailureKind::ShortBody,
            None => FailureKind::Other,
        },
    };
    Attempt {
        kind,
        status,
        message: e.to_string(),
    }
}

/// object_store keeps the status in a private `RetryError`, so it is read from the chain's
/// text ("... non-2xx status code: 503 Service Unavailable ...").
fn status_of(e: &object_store::Error) -> Option<u16> {
    use object_store::Error as E;
    match e {
        E::NotFound { .. } => return Some(404),
        E::Precondition { .. } => return Some(412),
        E::NotModified { .. } => return Some(304),
        _ => {}
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        let text = s.to_string();
        if let Some(at) = text.find("status code: ") {
            let digits = text[at + 13..].get(..3)?;
            return digits.parse().ok();
        }
        source = s.source();
    }
    None
}

fn http_kind(e: &object_store::Error) -> Option<HttpErrorKind> {
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(http) = s.downcast_ref::<HttpError>() {
            return Some(http.kind());
        }
        source = s.source();
    }
    None
}
