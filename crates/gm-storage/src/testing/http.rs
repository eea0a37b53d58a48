//! The little HTTP/1.1 that [`super::FaultServer`] speaks: request heads, byte ranges and
//! response heads.

use std::io::{self, BufRead};
use std::ops::Range;

/// A parsed request head.
#[derive(Debug)]
pub(crate) struct Request {
    pub method: String,
    pub path: String,
    pub range: Option<String>,
    pub if_match: Option<String>,
    pub close: bool,
}

/// Reads one request head; `Ok(None)` at a clean end of the connection.
pub(crate) fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or("/");
    // Keys are percent-encoded on the wire; the server's map holds them decoded.
    let path = decode(
        target
            .split('?')
            .next()
            .unwrap_or("/")
            .trim_start_matches('/'),
    );
    let mut request = Request {
        method,
        path,
        range: None,
        if_match: None,
        close: false,
    };
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().to_string();
        match name.trim().to_ascii_lowercase().as_str() {
            "range" => request.range = Some(value),
            "if-match" => request.if_match = Some(value),
            "connection" => request.close = value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    Ok(Some(request))
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = s
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The bytes a `Range` header asks of a `len`-byte object: `Ok(None)` for no header,
/// `Err(())` when unsatisfiable (416).
pub(crate) fn byte_range(header: Option<&str>, len: u64) -> Result<Option<Range<u64>>, ()> {
    let Some(spec) = header.and_then(|h| h.strip_prefix("bytes=")) else {
        return Ok(None);
    };
    let (start, end) = spec.split_once('-').ok_or(())?;
    let range = if start.is_empty() {
        let suffix: u64 = end.parse().map_err(|_| ())?;
        len.saturating_sub(suffix)..len
    } else {
        let start: u64 = start.parse().map_err(|_| ())?;
        let end = if end.is_empty() {
            len
        } else {
            end.parse::<u64>().map_err(|_| ())? + 1
        };
        start..end.min(len)
    };
    if range.start >= len {
        return Err(());
    }
    Ok(Some(range))
}

/// A response head with the headers every answer carries.
pub(crate) fn head(status: u16, length: u64, extra: &[(&str, String)]) -> String {
    let reason = match status {
        200 => "OK",
        206 => "Partial Content",
        404 => "Not Found",
        412 => "Precondition Failed",
        416 => "Range Not Satisfiable",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    };
    let mut text = format!("HTTP/1.1 {status} {reason}\r\nContent-Length: {length}\r\n");
    for (name, value) in extra {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_rfc_9110() {
        assert_eq!(byte_range(Some("bytes=0-9"), 100), Ok(Some(0..10)));
        assert_eq!(byte_range(Some("bytes=90-200"), 100), Ok(Some(90..100)));
        assert_eq!(byte_range(Some("bytes=95-"), 100), Ok(Some(95..100)));
        assert_eq!(byte_range(Some("bytes=-5"), 100), Ok(Some(95..100)));
        assert_eq!(byte_range(Some("bytes=100-"), 100), Err(()));
        assert_eq!(byte_range(None, 100), Ok(None));
        assert_eq!(decode("a%20b/c%2Bd"), "a b/c+d");
    }
}
