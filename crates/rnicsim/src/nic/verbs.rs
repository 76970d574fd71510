//! The verbs-level host interface: memory regions, work requests and completions, with the
//! error statuses real verbs report (IBA chapter 11; `ibv_wc_status` names in parentheses).

use crate::units::Time;

/// Access rights of a memory region (`IBV_ACCESS_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Access(pub u8);

impl Access {
    pub const LOCAL_WRITE: Access = Access(1);
    pub const REMOTE_WRITE: Access = Access(2);
    pub const REMOTE_READ: Access = Access(4);
    /// Memory windows may be bound to the region (IBV_ACCESS_MW_BIND).
    pub const MW_BIND: Access = Access(8);
    pub const ALL: Access = Access(15);
    /// The rights a remote peer may hold.
    pub const REMOTE: Access = Access(6);

    pub fn allows(self, other: Access) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Access {
    type Output = Access;
    fn bitor(self, o: Access) -> Access {
        Access(self.0 | o.0)
    }
}

/// A memory window (a type 2 window, bound by the host's verbs call): a sub-range of one of the
/// host's regions with an rkey and remote rights of its own, revoked by invalidating it. A
/// window's rkey is never reused, so an invalidated window's key stays dead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryWindow {
    pub host: u32,
    pub addr: u64,
    pub len: u64,
    pub rkey: u32,
    /// Remote rights only (a subset of the region's).
    pub access: Access,
    /// The lkey of the region it is bound to.
    pub region: u32,
}

/// A registered memory region of one host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRegion {
    pub host: u32,
    pub addr: u64,
    pub len: u64,
    pub lkey: u32,
    pub rkey: u32,
    pub access: Access,
}

/// Whether `[addr, addr + len)` lies inside `[base, base + size)`.
fn inside(base: u64, size: u64, addr: u64, len: u64) -> bool {
    addr >= base && addr.checked_add(len).is_some_and(|end| end <= base + size)
}

impl MemoryRegion {
    /// Whether `[addr, addr + len)` lies inside the region.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        inside(self.addr, self.len, addr, len)
    }
}

impl MemoryWindow {
    /// Whether `[addr, addr + len)` lies inside the window.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        inside(self.addr, self.len, addr, len)
    }
}

/// The operation of a send work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Write,
    WriteImm(u32),
    Read,
    Send,
    SendImm(u32),
}

impl Verb {
    pub fn imm(self) -> Option<u32> {
        match self {
            Verb::WriteImm(i) | Verb::SendImm(i) => Some(i),
            _ => None,
        }
    }
}

/// A send work request (`ibv_send_wr` with one scatter/gather entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWr {
    pub id: u64,
    pub verb: Verb,
    /// Local buffer (source of WRITE/SEND, destination of READ) and its lkey.
    pub local_addr: u64,
    pub len: u64,
    pub lkey: u32,
    /// Remote buffer of WRITE/READ and its rkey (ignored for SEND).
    pub remote_addr: u64,
    pub rkey: u32,
}

/// A receive work request (`ibv_recv_wr` with one scatter/gather entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWr {
    pub id: u64,
    pub addr: u64,
    pub len: u64,
    pub lkey: u32,
}

/// Completion status (`ibv_wc_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Success,
    /// A local buffer is outside its region or the lkey is wrong (`IBV_WC_LOC_PROT_ERR`).
    LocalProtection,
    /// A received SEND is longer than the receive buffer (`IBV_WC_LOC_LEN_ERR`).
    LocalLength,
    /// The responder rejected the rkey, range or access right (`IBV_WC_REM_ACCESS_ERR`).
    RemoteAccess,
    /// The responder could not accept the request (`IBV_WC_REM_INV_REQ_ERR`).
    RemoteInvalidRequest,
    /// The responder had no receive WQE after all RNR retries (`IBV_WC_RNR_RETRY_EXC_ERR`).
    RnrRetryExceeded,
    /// No acknowledgement after all transport retries (`IBV_WC_RETRY_EXC_ERR`).
    RetryExceeded,
    /// Flushed because the queue pair entered the error state (`IBV_WC_WR_FLUSH_ERR`).
    Flushed,
}

/// What completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    Write,
    Read,
    Send,
    /// A receive WQE consumed by a SEND or by a WRITE with immediate data.
    Recv,
}

/// A completion queue entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub wr_id: u64,
    pub qp: u32,
    pub kind: CompletionKind,
    pub status: Status,
    /// Bytes transferred (receive side: bytes placed).
    pub bytes: u64,
    pub imm: Option<u32>,
    /// When the entry became visible to the host.
    pub at: Time,
}

/// Errors of a post call (a verbs call returning non-zero; nothing is queued).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostError {
    /// The send or receive queue is full.
    QueueFull,
    /// The queue pair is not in a state that accepts work.
    BadState,
    /// No open queue pair has this number.
    UnknownQp,
    /// The message is longer than a packet header's DMA length field can say (4 GiB − 1 bytes).
    TooLong,
}

/// The longest message one work request may move: RETH's DMA length is 32 bits.
pub const MAX_MESSAGE_BYTES: u64 = u32::MAX as u64;

/// Errors of the verbs API for arguments that name nothing valid (no state changes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerbsError {
    #[error("node {0} is not a host")]
    NotAHost(u32),
    #[error("a rate limit of 0 would stop the queue pair for good (u64::MAX removes the limit)")]
    ZeroRate,
    #[error("no open queue pair {0}")]
    UnknownQp(u32),
    #[error("[{addr}, {addr} + {len}) is outside the host's memory")]
    OutsideMemory { addr: u64, len: u64 },
    #[error("the region [{addr}, {addr} + {len}) cannot be registered (outside memory or empty)")]
    BadRegion { addr: u64, len: u64 },
    #[error("no carried path {0} (see routing.k_shortest_paths)")]
    UnknownPath(u32),
    #[error("node {0} is not a switch")]
    NotASwitch(u32),
    #[error("a memory window [{addr}, {addr} + {len}) cannot be bound: {why}")]
    BadWindow { addr: u64, len: u64, why: &'static str },
    #[error("no valid memory window with rkey {0:#x}")]
    UnknownWindow(u32),
    #[error("host {0}'s NIC has no GPU beside it (set [nic.gpu])")]
    NoGpu(u32),
    #[error("a signal is one packet: at most {max} B, got {0}", max = crate::nic::scr::MAX_SIGNAL_BYTES)]
    SignalTooLarge(u32),
}
