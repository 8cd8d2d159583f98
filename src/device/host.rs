//! A small client for the adb server's *host* services (`host:version`, `host:devices-l`,
//! `host:track-devices-l`, `host:connect:`), with deadlines on every read.
//!
//! Why not `adb_client::ADBServer`: for any loopback address it runs `adb start-server` before connecting, without
//! the configured port, so a connector pointed at `127.0.0.1:5038` would silently spawn a second server on 5037.
//! The connector never starts adb servers behind the operator's back. Device services (`host:transport:` + shell,
//! exec, sync, framebuffer) build on [`request`] in `device::transport`.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// One line of `adb devices -l`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedDevice {
    pub serial: String,
    /// `device`, `offline`, `unauthorized`, `authorizing`, `connecting`, `recovery`, ...
    pub state: String,
    pub model: Option<String>,
}

#[derive(Debug)]
pub enum HostError {
    /// The adb server cannot be reached (not running, wrong address).
    Unreachable(std::io::Error),
    /// The adb server answered FAIL with this message.
    Fail(String),
    Timeout,
    Protocol(String),
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreachable(e) => write!(f, "adb server unreachable: {e}"),
            Self::Fail(m) => write!(f, "adb server refused: {m}"),
            Self::Timeout => write!(f, "adb server did not answer in time"),
            Self::Protocol(m) => write!(f, "unexpected adb server reply: {m}"),
        }
    }
}

/// Bound on each read/write of a host-protocol exchange (connect, request, status, reply block).
pub const IO_TIMEOUT: Duration = Duration::from_secs(5);

async fn read_exact(s: &mut TcpStream, buf: &mut [u8]) -> Result<(), HostError> {
    match timeout(IO_TIMEOUT, s.read_exact(buf)).await {
        Err(_) => Err(HostError::Timeout),
        Ok(Err(e)) => Err(HostError::Protocol(format!("connection closed: {e}"))),
        Ok(Ok(_)) => Ok(()),
    }
}

/// Reads a 4-hex-digit length and that many bytes.
async fn read_hex_block(s: &mut TcpStream) -> Result<String, HostError> {
    let mut len = [0u8; 4];
    read_exact(s, &mut len).await?;
    let n = std::str::from_utf8(&len)
        .ok()
        .and_then(|t| usize::from_str_radix(t, 16).ok())
        .ok_or_else(|| HostError::Protocol(format!("bad length prefix {len:?}")))?;
    let mut body = vec![0u8; n];
    read_exact(s, &mut body).await?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// Opens a connection and sends one host request; returns the stream after OKAY.
pub async fn request(server: SocketAddr, service: &str) -> Result<TcpStream, HostError> {
    let mut s = match timeout(IO_TIMEOUT, TcpStream::connect(server)).await {
        Err(_) => return Err(HostError::Timeout),
        Ok(Err(e)) => return Err(HostError::Unreachable(e)),
        Ok(Ok(s)) => s,
    };
    send_request(&mut s, service).await?;
    Ok(s)
}

/// Sends one request on an open connection (e.g. a device service after `host:transport:`) and reads its status.
pub async fn send_request(s: &mut TcpStream, service: &str) -> Result<(), HostError> {
    let msg = format!("{:04x}{service}", service.len());
    timeout(IO_TIMEOUT, s.write_all(msg.as_bytes()))
        .await
        .map_err(|_| HostError::Timeout)?
        .map_err(HostError::Unreachable)?;
    let mut status = [0u8; 4];
    read_exact(s, &mut status).await?;
    match &status {
        b"OKAY" => Ok(()),
        b"FAIL" => Err(HostError::Fail(read_hex_block(s).await?)),
        other => Err(HostError::Protocol(format!("status {:?}", String::from_utf8_lossy(other)))),
    }
}

/// Reads one length-prefixed reply block (e.g. the answer to `host-serial:SERIAL:features`).
pub async fn read_block(s: &mut TcpStream) -> Result<String, HostError> {
    read_hex_block(s).await
}

/// `host:version`: the adb server's internal protocol version (41 for current platform-tools).
pub async fn version(server: SocketAddr) -> Result<u32, HostError> {
    let mut s = request(server, "host:version").await?;
    let v = read_hex_block(&mut s).await?;
    u32::from_str_radix(v.trim(), 16).map_err(|_| HostError::Protocol(format!("version {v:?}")))
}

pub async fn devices(server: SocketAddr) -> Result<Vec<ListedDevice>, HostError> {
    let mut s = request(server, "host:devices-l").await?;
    Ok(parse_devices(&read_hex_block(&mut s).await?))
}

/// `host:connect:HOST:PORT` (what `adb connect` does). Returns the server's message.
pub async fn connect(server: SocketAddr, target: &str) -> Result<String, HostError> {
    let mut s = request(server, &format!("host:connect:{target}")).await?;
    let msg = read_hex_block(&mut s).await?;
    if msg.starts_with("failed") || msg.starts_with("cannot") {
        return Err(HostError::Fail(msg));
    }
    Ok(msg)
}

/// `host-serial:SERIAL:reconnect` (what `adb -s SERIAL reconnect` sends; AOSP adb.cpp `service == "reconnect"`,
/// in every adb since 1.0.39, Debian's adb 29 included): the adb server kicks that device's transport and
/// connects it again (USB: re-enumerates the interface; `adb connect`ed devices: a new TCP connection). The server
/// answers OKAY with `reconnecting SERIAL [STATE]`, or OKAY with its error text when it has no such device.
pub async fn reconnect(server: SocketAddr, serial: &str) -> Result<String, HostError> {
    let mut s = request(server, &format!("host-serial:{serial}:reconnect")).await?;
    let msg = read_hex_block(&mut s).await?;
    if msg.starts_with("reconnecting") {
        Ok(msg.trim_end().to_owned())
    } else {
        Err(HostError::Fail(msg.trim_end().to_owned()))
    }
}

/// `host:track-devices-l`: the returned stream yields the full device list on every change.
pub struct Tracker {
    stream: TcpStream,
}

impl Tracker {
    pub async fn open(server: SocketAddr) -> Result<Tracker, HostError> {
        Ok(Tracker { stream: request(server, "host:track-devices-l").await? })
    }

    /// The next full list; waits as long as nothing changes (no deadline: silence is the normal case).
    pub async fn next(&mut self) -> Result<Vec<ListedDevice>, HostError> {
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).await.map_err(|e| HostError::Protocol(format!("tracking ended: {e}")))?;
        let n = std::str::from_utf8(&len)
            .ok()
            .and_then(|t| usize::from_str_radix(t, 16).ok())
            .ok_or_else(|| HostError::Protocol(format!("bad length prefix {len:?}")))?;
        let mut body = vec![0u8; n];
        read_exact(&mut self.stream, &mut body).await?;
        Ok(parse_devices(&String::from_utf8_lossy(&body)))
    }
}

/// Parses `adb devices -l` output: `SERIAL<ws>STATE<ws>key:value...` per line. Also takes the CLI's output (its
/// `List of devices attached` header and `* daemon …` lines are skipped) and the multi-word state `no permissions
/// (…); see [url]` of a USB device the adb server may not open (tests/fixtures/real/devices-*).
pub fn parse_devices(text: &str) -> Vec<ListedDevice> {
    text.lines()
        .filter(|l| !l.starts_with("List of devices attached") && !l.starts_with("* "))
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let serial = parts.next()?.to_owned();
            let mut state = parts.next()?.to_owned();
            if state == "no" && line.contains("no permissions") {
                state = "no permissions".into();
            }
            let model = parts.find_map(|p| p.strip_prefix("model:")).map(|m| m.replace('_', " ").trim().to_owned());
            Some(ListedDevice { serial, state, model })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_devices_l() {
        let text =
            "R58N123ABC             device usb:1-1 product:panther model:Pixel_7 device:panther transport_id:3\n\
                    127.0.0.1:5555         unauthorized transport_id:4\n\
                    emulator-5554\toffline\n";
        let d = parse_devices(text);
        assert_eq!(d.len(), 3);
        assert_eq!(
            d[0],
            ListedDevice { serial: "R58N123ABC".into(), state: "device".into(), model: Some("Pixel 7".into()) }
        );
        assert_eq!(d[1].state, "unauthorized");
        assert_eq!(d[2].serial, "emulator-5554");
        assert!(parse_devices("").is_empty());
    }
}
