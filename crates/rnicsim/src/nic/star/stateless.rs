//! The stateless side's NIC (StaR §III-C3, Fig. 4): every arriving packet says everything
//! needed to handle it, so handling it is a function of the packet alone. [`react`] takes no
//! connection, table or cache: this is the whole of the stateless NIC's per-packet logic.

use crate::wire::star::{StarBody, StarCqe, StarHeader, StarMeta, StarType};

/// What the stateless NIC does with one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reaction {
    /// An RD: DMA its payload to `addr`; then answer with `reply` (an RDA) if it asked for one.
    Store { addr: u64, len: u32, reply: Option<StarHeader> },
    /// A GD: DMA `len` bytes from `addr` and send them in `reply` (a GDA).
    Fetch { addr: u64, len: u32, reply: StarHeader },
    /// A CQEP: DMA the CQE to the library's completion queue and answer with `reply` (an EA).
    Complete { cqe: StarCqe, reply: StarHeader },
    /// An EA for a WQEP: hand it to the library of handle `qp` (it stops the WQEP's timer).
    Acknowledged { qp: u32, index: u32, migrate: bool },
    /// Not something a stateless side takes.
    Refuse,
}

/// The stateless NIC's handling of a packet bound for its stateless processing.
pub fn react(meta: &StarMeta) -> Reaction {
    let h = meta.header;
    let answer = |ptype, len| StarHeader { ptype, len, ack: false, checksum: 0, ..h };
    match (h.ptype, meta.body) {
        (StarType::Rd, _) => Reaction::Store { addr: h.addr, len: h.len as u32, reply: h.ack.then(|| answer(StarType::Rda, 0)) },
        (StarType::Gd, _) => Reaction::Fetch { addr: h.addr, len: h.len as u32, reply: answer(StarType::Gda, h.len) },
        (StarType::Cqep, StarBody::Cqe(cqe)) => Reaction::Complete { cqe, reply: answer(StarType::Ea, 0) },
        (StarType::Ea, _) => Reaction::Acknowledged { qp: h.addr as u32, index: h.psn, migrate: h.migrate },
        _ => Reaction::Refuse,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nic::verbs::{CompletionKind, Status};
    use crate::wire::star::StarOp;

    #[test]
    fn each_packet_is_answered_from_its_own_header() {
        let rd = StarHeader { ptype: StarType::Rd, opt: StarOp::Send, ack: true, qpn: 17, psn: 5, addr: 0x1000, len: 32, ..Default::default() };
        match react(&StarMeta { header: rd, body: StarBody::None }) {
            Reaction::Store { addr: 0x1000, len: 32, reply: Some(r) } => {
                assert_eq!((r.ptype, r.qpn, r.psn, r.addr, r.len, r.ack), (StarType::Rda, 17, 5, 0x1000, 0, false));
            }
            other => panic!("{other:?}"),
        }
        let quiet = StarHeader { ack: false, ..rd };
        assert!(matches!(react(&StarMeta { header: quiet, body: StarBody::None }), Reaction::Store { reply: None, .. }));
        let gd = StarHeader { ptype: StarType::Gd, len: 1000, ..rd };
        match react(&StarMeta { header: gd, body: StarBody::None }) {
            Reaction::Fetch { addr: 0x1000, len: 1000, reply } => assert_eq!((reply.ptype, reply.len, reply.psn), (StarType::Gda, 1000, 5)),
            other => panic!("{other:?}"),
        }
        let cqe = StarCqe { qp: 3, index: 9, kind: CompletionKind::Recv, status: Status::Success, bytes: 32, imm: None };
        let cqep = StarHeader { ptype: StarType::Cqep, len: 64, ..rd };
        match react(&StarMeta { header: cqep, body: StarBody::Cqe(cqe) }) {
            Reaction::Complete { cqe: c, reply } => {
                assert_eq!(c, cqe);
                assert_eq!((reply.ptype, reply.psn, reply.qpn), (StarType::Ea, 5, 17));
            }
            other => panic!("{other:?}"),
        }
        let ea = StarHeader { ptype: StarType::Ea, addr: 3, psn: 12, migrate: true, ..rd };
        assert_eq!(react(&StarMeta { header: ea, body: StarBody::None }), Reaction::Acknowledged { qp: 3, index: 12, migrate: true });
        for t in [StarType::Wqep, StarType::Rda, StarType::Gda] {
            let h = StarHeader { ptype: t, ..rd };
            assert_eq!(react(&StarMeta { header: h, body: StarBody::None }), Reaction::Refuse, "{t:?} is for the stateful side");
        }
    }
}
