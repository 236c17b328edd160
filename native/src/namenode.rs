//! A NameNode connection for the native HDFS lane: Hadoop IPC (version 9, simple authentication)
//! over one non-blocking TCP socket, with `ClientNamenodeProtocol`'s messages for the calls the
//! lane makes (`prost` encodes and decodes them; the field numbers are those of Hadoop's
//! `RpcHeader.proto`, `IpcConnectionContext.proto`, `ProtobufRpcEngine.proto` and
//! `ClientNamenodeProtocol.proto`, 3.x).
//!
//! Written by hand rather than through the `hdfs-native` crate's client: that client writes each
//! call with its own `send` and reads each response with two `recv`s through a task hand-off, which
//! on one machine made the client cost about half the NameNode's own CPU per operation. Here the
//! calls queued in one turn of the lane go out in one `send`, and one `recv` takes every response
//! that has arrived (the lane's loop: `queue` ... `flush`, `wait`, `fill`, `next_response`).
//! Kerberos (SASL), HA failover and encryption zones are not supported: the Python lanes serve those.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::time::Duration;

use prost::Message;

const PROTOCOL: &str = "org.apache.hadoop.hdfs.protocol.ClientProtocol";
/// `RpcKindProto.RPC_PROTOCOL_BUFFER`
const RPC_PROTOCOL_BUFFER: i32 = 2;
/// Room kept free in the read buffer before a read.
const READ_CHUNK: usize = 1 << 16;
/// A response larger than this is a broken stream, not a message.
const MAX_FRAME: usize = 256 << 20;

// ---------------------------------------------------------------------------- messages

#[derive(Clone, PartialEq, Message)]
struct RpcRequestHeaderProto {
    #[prost(int32, optional, tag = "1")]
    rpc_kind: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    rpc_op: Option<i32>,
    #[prost(sint32, required, tag = "3")]
    call_id: i32,
    #[prost(bytes = "vec", required, tag = "4")]
    client_id: Vec<u8>,
    #[prost(sint32, optional, tag = "5")]
    retry_count: Option<i32>,
}

#[derive(Clone, PartialEq, Message)]
struct RequestHeaderProto {
    #[prost(string, required, tag = "1")]
    method_name: String,
    #[prost(string, required, tag = "2")]
    declaring_class_protocol_name: String,
    #[prost(uint64, required, tag = "3")]
    client_protocol_version: u64,
}

#[derive(Clone, PartialEq, Message)]
struct UserInformationProto {
    #[prost(string, optional, tag = "1")]
    effective_user: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct IpcConnectionContextProto {
    #[prost(message, optional, tag = "2")]
    user_info: Option<UserInformationProto>,
    #[prost(string, optional, tag = "3")]
    protocol: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct RpcResponseHeaderProto {
    #[prost(uint32, required, tag = "1")]
    call_id: u32,
    #[prost(int32, required, tag = "2")]
    status: i32,
    #[prost(string, optional, tag = "4")]
    exception_class_name: Option<String>,
    #[prost(string, optional, tag = "5")]
    error_msg: Option<String>,
}

/// A request with one path (getFileInfo, getAclStatus, getContentSummary).
#[derive(Clone, PartialEq, Message)]
pub(crate) struct PathRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct GetBlockLocationsRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(uint64, required, tag = "2")]
    pub offset: u64,
    #[prost(uint64, required, tag = "3")]
    pub length: u64,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct FsPermission {
    #[prost(uint32, required, tag = "1")]
    pub perm: u32,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct CreateRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(message, required, tag = "2")]
    pub masked: FsPermission,
    #[prost(string, required, tag = "3")]
    pub client_name: String,
    #[prost(uint32, required, tag = "4")]
    pub create_flag: u32,
    #[prost(bool, required, tag = "5")]
    pub create_parent: bool,
    #[prost(uint32, required, tag = "6")]
    pub replication: u32,
    #[prost(uint64, required, tag = "7")]
    pub block_size: u64,
    #[prost(int32, repeated, packed = "false", tag = "8")]
    pub crypto_protocol_version: Vec<i32>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct CompleteRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(string, required, tag = "2")]
    pub client_name: String,
    /// an `ExtendedBlockProto`, as the NameNode sent it
    #[prost(bytes = "vec", optional, tag = "3")]
    pub last: Option<Vec<u8>>,
    #[prost(uint64, optional, tag = "4")]
    pub file_id: Option<u64>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct AppendRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(string, required, tag = "2")]
    pub client_name: String,
    #[prost(uint32, optional, tag = "3")]
    pub flag: Option<u32>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct DeleteRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(bool, required, tag = "2")]
    pub recursive: bool,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct MkdirsRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(message, required, tag = "2")]
    pub masked: FsPermission,
    #[prost(bool, required, tag = "3")]
    pub create_parent: bool,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct Rename2Request {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(string, required, tag = "2")]
    pub dst: String,
    #[prost(bool, required, tag = "3")]
    pub overwrite_dest: bool,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct GetListingRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(bytes = "vec", required, tag = "2")]
    pub start_after: Vec<u8>,
    #[prost(bool, required, tag = "3")]
    pub need_location: bool,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct SetPermissionRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(message, required, tag = "2")]
    pub permission: FsPermission,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct SetOwnerRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(string, optional, tag = "2")]
    pub username: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub groupname: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct SetTimesRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(uint64, required, tag = "2")]
    pub mtime: u64,
    #[prost(uint64, required, tag = "3")]
    pub atime: u64,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct SetReplicationRequest {
    #[prost(string, required, tag = "1")]
    pub src: String,
    #[prost(uint32, required, tag = "2")]
    pub replication: u32,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct Empty {}

/// A response whose field 1 is an optional message (getFileInfo's `fs`, create's `fs`,
/// getBlockLocations' `locations`, getListing's `dirList`), kept undecoded.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct FirstField {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub first: Option<Vec<u8>>,
}

/// A response whose field 1 is a bool (`result` of delete, complete, setReplication).
#[derive(Clone, PartialEq, Message)]
pub(crate) struct BoolResult {
    #[prost(bool, optional, tag = "1")]
    pub result: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct AppendResponse {
    /// a `LocatedBlockProto`
    #[prost(bytes = "vec", optional, tag = "1")]
    pub block: Option<Vec<u8>>,
    /// an `HdfsFileStatusProto`
    #[prost(bytes = "vec", optional, tag = "2")]
    pub stat: Option<Vec<u8>>,
}

/// The fields of `HdfsFileStatusProto` the lane reads.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct FileStatus {
    #[prost(bytes = "vec", optional, tag = "2")]
    pub path: Option<Vec<u8>>,
    #[prost(uint32, optional, tag = "10")]
    pub block_replication: Option<u32>,
    #[prost(uint64, optional, tag = "13")]
    pub file_id: Option<u64>,
}

/// The block of a `LocatedBlockProto` (an `ExtendedBlockProto`, undecoded).
#[derive(Clone, PartialEq, Message)]
pub(crate) struct LocatedBlock {
    #[prost(bytes = "vec", optional, tag = "1")]
    pub b: Option<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct DirectoryListing {
    /// `HdfsFileStatusProto`s, undecoded
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub partial_listing: Vec<Vec<u8>>,
    #[prost(uint32, optional, tag = "2")]
    pub remaining_entries: Option<u32>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct ServerDefaults {
    #[prost(uint64, optional, tag = "1")]
    pub block_size: Option<u64>,
    #[prost(uint32, optional, tag = "4")]
    pub replication: Option<u32>,
}

// ---------------------------------------------------------------------------- the connection

/// How a call ended: its response body, or the server's exception (class, message), or a fatal
/// error (the connection is unusable).
pub(crate) enum Reply {
    Ok(Vec<u8>),
    Error(String, String),
    Fatal(String),
}

/// `hdfs://host:port` -> `host:port` (None for a URL without a port: a nameservice).
pub(crate) fn address(url: &str) -> Option<String> {
    let rest = url.strip_prefix("hdfs://")?;
    let authority = rest.split('/').next()?;
    let (_, port) = authority.rsplit_once(':')?;
    port.parse::<u16>().ok()?;
    Some(authority.to_string())
}

/// The user the calls run as: `HADOOP_USER_NAME`, else the process's user (as `hdfs-native`).
pub(crate) fn simple_user() -> String {
    if let Ok(name) = std::env::var("HADOOP_USER_NAME") {
        if !name.is_empty() {
            return name;
        }
    }
    let mut buf = vec![0u8; 4096];
    let mut pwd = std::mem::MaybeUninit::<libc::passwd>::uninit();
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call; `buf` outlives the use of `pw_name` below.
    let rc = unsafe {
        libc::getpwuid_r(libc::getuid(), pwd.as_mut_ptr(), buf.as_mut_ptr().cast(), buf.len(), &mut found)
    };
    if rc != 0 || found.is_null() {
        return "unknown".to_string();
    }
    // SAFETY: `found` points to `pwd`, filled by getpwuid_r, whose `pw_name` is NUL-terminated in `buf`.
    unsafe { std::ffi::CStr::from_ptr((*found).pw_name) }.to_string_lossy().into_owned()
}

/// 16 random bytes to tell this client's calls apart (the NameNode's retry cache keys on them).
fn client_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    // SAFETY: `id` is writable for its 16 bytes; getrandom fills at most that many.
    let got = unsafe { libc::getrandom(id.as_mut_ptr().cast(), id.len(), 0) };
    if got != id.len() as isize {
        // no entropy source: the clock and the process id still tell two clients apart
        id[..8].copy_from_slice(&crate::lane::now_ns().to_le_bytes());
        id[8..12].copy_from_slice(&std::process::id().to_le_bytes());
    }
    id
}

pub(crate) struct Connection {
    sock: TcpStream,
    client_id: Vec<u8>,
    next_call: i32,
    wbuf: Vec<u8>,
    wpos: usize,
    rbuf: Vec<u8>,
    rpos: usize,
    rend: usize,
    scratch: Vec<u8>,
    pub client_name: String,
}

impl Connection {
    /// Connect (at most `timeout` per address), send the IPC header and the connection context.
    pub(crate) fn open(addr: &str, user: &str, timeout: Duration) -> io::Result<Connection> {
        let mut last = io::Error::new(ErrorKind::NotFound, format!("no address for {addr}"));
        let mut sock = None;
        for a in addr.to_socket_addrs()? {
            match TcpStream::connect_timeout(&a, timeout) {
                Ok(s) => {
                    sock = Some(s);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let sock = sock.ok_or(last)?;
        sock.set_nodelay(true)?;
        let id = client_id();
        let mut conn = Connection {
            sock,
            client_id: id.to_vec(),
            next_call: 0,
            wbuf: Vec::with_capacity(1 << 16),
            wpos: 0,
            rbuf: vec![0; 4 * READ_CHUNK],
            rpos: 0,
            rend: 0,
            scratch: Vec::with_capacity(512),
            client_name: format!("mimesisbench_native_{}", id.iter().map(|b| format!("{b:02x}")).collect::<String>()),
        };
        // "hrpc", version 9, service class 0, auth protocol NONE (simple authentication)
        conn.wbuf.extend_from_slice(b"hrpc\x09\x00\x00");
        let header = RpcRequestHeaderProto {
            rpc_kind: Some(RPC_PROTOCOL_BUFFER),
            rpc_op: Some(0),
            call_id: -3,
            client_id: conn.client_id.clone(),
            retry_count: Some(-1),
        };
        let context = IpcConnectionContextProto {
            user_info: Some(UserInformationProto { effective_user: Some(user.to_string()) }),
            protocol: Some(PROTOCOL.to_string()),
        };
        conn.frame(&[&header.encode_length_delimited_to_vec(), &context.encode_length_delimited_to_vec()]);
        conn.sock.set_nonblocking(true)?;
        Ok(conn)
    }

    fn frame(&mut self, parts: &[&[u8]]) {
        let size: usize = parts.iter().map(|p| p.len()).sum();
        self.wbuf.extend_from_slice(&(size as u32).to_be_bytes());
        for p in parts {
            self.wbuf.extend_from_slice(p);
        }
    }

    /// Queue a call of `method` (sent by the next `flush`); its call id.
    pub(crate) fn queue<M: Message>(&mut self, method: &str, request: &M) -> i32 {
        let call_id = self.next_call;
        self.next_call = self.next_call.wrapping_add(1) & i32::MAX;
        let header = RpcRequestHeaderProto {
            rpc_kind: Some(RPC_PROTOCOL_BUFFER),
            rpc_op: Some(0),
            call_id,
            client_id: std::mem::take(&mut self.client_id),
            retry_count: Some(0),
        };
        let method_header = RequestHeaderProto {
            method_name: method.to_string(),
            declaring_class_protocol_name: PROTOCOL.to_string(),
            client_protocol_version: 1,
        };
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        header.encode_length_delimited(&mut scratch).expect("a Vec grows");
        method_header.encode_length_delimited(&mut scratch).expect("a Vec grows");
        request.encode_length_delimited(&mut scratch).expect("a Vec grows");
        self.client_id = header.client_id;
        self.wbuf.extend_from_slice(&(scratch.len() as u32).to_be_bytes());
        self.wbuf.extend_from_slice(&scratch);
        self.scratch = scratch;
        call_id
    }

    /// True while queued bytes wait to be sent.
    pub(crate) fn pending(&self) -> bool {
        self.wpos < self.wbuf.len()
    }

    /// Send what the socket takes now (one `send` for everything queued, as a rule).
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        while self.wpos < self.wbuf.len() {
            match self.sock.write(&self.wbuf[self.wpos..]) {
                Ok(0) => return Err(io::Error::new(ErrorKind::WriteZero, "the NameNode closed the connection")),
                Ok(k) => self.wpos += k,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        if self.wpos == self.wbuf.len() {
            self.wbuf.clear();
            self.wpos = 0;
        }
        Ok(())
    }

    /// Read what has arrived (without blocking); an error when the connection closed. The buffer
    /// is zeroed once (`rbuf.len()` is its size, `rend` the end of what was read).
    pub(crate) fn fill(&mut self) -> io::Result<()> {
        if self.rpos == self.rend {
            self.rpos = 0;
            self.rend = 0;
        }
        loop {
            if self.rbuf.len() - self.rend < READ_CHUNK {
                if self.rpos > 0 {
                    self.rbuf.copy_within(self.rpos..self.rend, 0); // compact
                    self.rend -= self.rpos;
                    self.rpos = 0;
                }
                if self.rbuf.len() - self.rend < READ_CHUNK {
                    let grown = self.rbuf.len() * 2;
                    self.rbuf.resize(grown, 0);
                }
            }
            let room = self.rbuf.len() - self.rend;
            match self.sock.read(&mut self.rbuf[self.rend..]) {
                Ok(0) => return Err(io::Error::new(ErrorKind::UnexpectedEof, "the NameNode closed the connection")),
                Ok(k) => {
                    self.rend += k;
                    if k < room {
                        return Ok(()); // drained what was there
                    }
                }
                Err(e) => match e.kind() {
                    ErrorKind::WouldBlock => return Ok(()),
                    ErrorKind::Interrupted => continue,
                    _ => return Err(e),
                },
            }
        }
    }

    /// The next complete response read so far: `(call id, reply)`.
    pub(crate) fn next_response(&mut self) -> Option<Result<(i32, Reply), String>> {
        let avail = &self.rbuf[self.rpos..self.rend];
        if avail.len() < 4 {
            return None;
        }
        let size = u32::from_be_bytes([avail[0], avail[1], avail[2], avail[3]]) as usize;
        if size > MAX_FRAME {
            return Some(Err(format!("a response of {size} bytes: the stream is broken")));
        }
        if avail.len() < 4 + size {
            return None;
        }
        let mut body = &avail[4..4 + size];
        self.rpos += 4 + size;
        let header = match RpcResponseHeaderProto::decode_length_delimited(&mut body) {
            Ok(h) => h,
            Err(e) => return Some(Err(format!("a bad response header: {e}"))),
        };
        let call = header.call_id as i32;
        let reply = match header.status {
            0 => match prost::encoding::decode_length_delimiter(&mut body) {
                Ok(n) if n <= body.len() => Reply::Ok(body[..n].to_vec()),
                _ => return Some(Err("a bad response body".to_string())),
            },
            1 => Reply::Error(header.exception_class_name.unwrap_or_default(), header.error_msg.unwrap_or_default()),
            _ => Reply::Fatal(format!(
                "{}: {}",
                header.exception_class_name.unwrap_or_default(),
                header.error_msg.unwrap_or_default()
            )),
        };
        Some(Ok((call, reply)))
    }

    /// Wait until the socket is readable (or writable, when bytes wait to be sent), at most
    /// `timeout_ns` (0: just look).
    pub(crate) fn wait(&self, timeout_ns: i64) {
        let mut fd = libc::pollfd {
            fd: self.sock.as_raw_fd(),
            events: libc::POLLIN | if self.pending() { libc::POLLOUT } else { 0 },
            revents: 0,
        };
        let t = timeout_ns.max(0);
        let ts = libc::timespec { tv_sec: (t / 1_000_000_000) as libc::time_t, tv_nsec: (t % 1_000_000_000) as _ };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        unsafe { libc::ppoll(&mut fd, 1, &ts, std::ptr::null()) };
    }

    /// One call, waited for (outside the replay: the server's defaults).
    pub(crate) fn call_now<M: Message>(&mut self, method: &str, request: &M, timeout: Duration) -> Result<Reply, String> {
        let id = self.queue(method, request);
        let deadline = crate::lane::now_ns() + timeout.as_nanos() as i64;
        loop {
            self.flush().map_err(|e| e.to_string())?;
            self.fill().map_err(|e| e.to_string())?;
            while let Some(r) = self.next_response() {
                let (call, reply) = r?;
                if call == id {
                    return Ok(reply);
                }
            }
            let left = deadline - crate::lane::now_ns();
            if left <= 0 {
                return Err(format!("no answer to {method} in {} s", timeout.as_secs()));
            }
            self.wait(left.min(50_000_000));
        }
    }
}
