//! The local collectors' side of HTTP in the uploader tests: reading one request.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;

/// A request's headers (lower-case names) and body.
pub type Request = (Vec<(String, String)>, Vec<u8>);

/// Reads one request (its `Content-Length` body): `None` when the connection ends first or is not HTTP/1.1.
pub fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers.iter().find(|(k, _)| k == "content-length").map(|(_, v)| v.parse().ok())??;
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some((headers, body))
}
