//! A local HTTP server replying as scripted (on 127.0.0.1; nothing mocked), and what it saw of each request.

use super::*;

/// What the server does with one request.
#[derive(Clone)]
pub(super) enum Act {
    /// A sane 200 for the batch.
    Ok,
    /// A status with headers and a body.
    Reply(u16, Vec<(&'static str, String)>, String),
    /// Read the request, then close without a reply.
    Drop,
    /// Headers, then one byte of body every 200 ms.
    Trickle,
    /// A 200 streaming this many bytes of body.
    Flood(usize),
    /// Read the request, then hold the connection this long without a reply.
    Hang(Duration),
}

#[derive(Clone, Debug)]
pub(super) struct Seen {
    pub(super) batch_id: String,
    pub(super) lines: Vec<String>,
    pub(super) gzip: bool,
    pub(super) auth: String,
}

pub(super) struct Server {
    pub(super) url: String,
    pub(super) seen: Arc<Mutex<Vec<Seen>>>,
    pub(super) written: Arc<Mutex<usize>>,
}

pub(super) fn serve(script: Vec<Act>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/reports", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let written = Arc::new(Mutex::new(0usize));
    let (s2, w2) = (seen.clone(), written.clone());
    thread::spawn(move || {
        let mut script = script.into_iter();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Some((headers, body)) = read_request(&mut stream) else { continue };
            let request = seen_of(&headers, body);
            let (batch_id, n) = (request.batch_id.clone(), request.lines.len());
            s2.lock().unwrap().push(request);
            let sane = format!(r#"{{"batch_id":"{batch_id}","accepted":{n},"rejected":{{}},"lines":{n}}}"#);
            act(stream, script.next().unwrap_or(Act::Ok), sane, &w2);
        }
    });
    Server { url, seen, written }
}

/// What the server saw of a request: its batch id, its lines (gunzipped), whether it was gzipped, its token.
fn seen_of(headers: &[(String, String)], body: Vec<u8>) -> Seen {
    let get = |k: &str| headers.iter().find(|(h, _)| h == k).map(|(_, v)| v.clone()).unwrap_or_default();
    let gzip = get("content-encoding") == "gzip";
    let raw = if gzip {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&body[..]).read_to_end(&mut out).unwrap();
        out
    } else {
        body
    };
    let text = String::from_utf8(raw).unwrap();
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    Seen { batch_id: get("ldp-batch-id"), lines, gzip, auth: get("authorization") }
}

/// Does `what` with the request's connection (`sane`: the sane answer to its batch; `written`: the bytes a flood
/// wrote).
fn act(mut stream: TcpStream, what: Act, sane: String, written: &Mutex<usize>) {
    match what {
        Act::Ok => respond(&mut stream, 200, &[], &sane),
        Act::Reply(status, headers, body) => {
            let body = if body == "SANE" { sane } else { body };
            respond(&mut stream, status, &headers, &body)
        }
        Act::Drop => drop(stream),
        Act::Trickle => {
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
            for _ in 0..50 {
                if stream.write_all(b" ").is_err() {
                    break;
                }
                thread::sleep(Duration::from_millis(200));
            }
        }
        Act::Flood(total) => {
            let _ = stream.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {total}\r\n\r\n").as_bytes());
            let chunk = vec![b'x'; 64 * 1024];
            let mut sent = 0;
            while sent < total {
                match stream.write(&chunk) {
                    Ok(n) if n > 0 => sent += n,
                    _ => break,
                }
            }
            *written.lock().unwrap() = sent;
        }
        Act::Hang(d) => {
            thread::sleep(d);
            drop(stream);
        }
    }
}

pub(super) fn respond(stream: &mut TcpStream, status: u16, headers: &[(&str, String)], body: &str) {
    let mut out = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    let _ = stream.write_all(out.as_bytes());
}
