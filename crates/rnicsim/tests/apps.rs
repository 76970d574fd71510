//! The application seam: an application written against the library connects queue pairs it
//! owns, posts verbs, and gets its timers, completions and messages as events; an event raised
//! while it runs (the error completion of its own bad post, and the flushes that follow) reaches
//! it right after the call returns.

use rnicsim::host::apps::{AppId, Application, Owner};
use rnicsim::nic::verbs::{Access, Completion, CompletionKind, RecvWr, SendWr, Status, Verb};
use rnicsim::scenario::LoadedScenario;
use rnicsim::units::{BitsPerSec, Time};
use rnicsim::wire::roce::Opcode;
use rnicsim::world::World;
use std::path::Path;
use std::sync::{Arc, Mutex};

const CLIENT: u32 = 1;
const SERVER: u32 = 2;
const ROUNDS: u32 = 10;
const LEN: u64 = 1000;

/// What the application saw, in order: (tag, completion kind, status, time).
type Log = Arc<Mutex<Vec<(u32, Option<CompletionKind>, Option<Status>, Time)>>>;

/// A ping-pong RPC: the client SENDs a request, the server answers with a SEND; ten rounds, then
/// the client posts a SEND with a bad key (an immediate error that flushes its posted receive).
struct PingPong {
    id: AppId,
    qps: (u32, u32),
    keys: [u32; 2],
    rounds: u32,
    log: Log,
}

impl PingPong {
    fn send(&self, w: &mut World, q: u32, lkey: u32, at: Time) {
        w.post_send_at(q, SendWr { id: 7, verb: Verb::Send, local_addr: 0, len: LEN, lkey, remote_addr: 0, rkey: 0 }, at).unwrap();
    }
    fn recv(&self, w: &mut World, q: u32, lkey: u32) {
        w.post_recv(q, RecvWr { id: 8, addr: 0, len: LEN, lkey }).unwrap();
    }
}

impl Application for PingPong {
    fn on_timer(&mut self, w: &mut World, tag: u32) {
        assert_eq!(tag, 99);
        self.log.lock().unwrap().push((tag, None, None, w.now));
        self.qps = w.connect_app(0, 1, Owner { app: self.id, tag: CLIENT }, Owner { app: self.id, tag: SERVER }).unwrap();
        let (c, s) = self.qps;
        self.recv(w, s, self.keys[1]);
        self.recv(w, c, self.keys[0]);
        self.send(w, c, self.keys[0], w.now);
    }

    fn on_completion(&mut self, w: &mut World, tag: u32, c: Completion) {
        self.log.lock().unwrap().push((tag, Some(c.kind), Some(c.status), c.at));
        let (cq, sq) = self.qps;
        match (tag, c.kind) {
            (SERVER, CompletionKind::Recv) => {
                self.recv(w, sq, self.keys[1]);
                self.send(w, sq, self.keys[1], c.at);
            }
            (CLIENT, CompletionKind::Recv) if c.status == Status::Success => {
                self.rounds += 1;
                self.recv(w, cq, self.keys[0]);
                if self.rounds < ROUNDS {
                    self.send(w, cq, self.keys[0], c.at);
                } else {
                    // A local protection error: the NIC completes it at once, with an error,
                    // and flushes the receive just posted, while this call is running.
                    self.send(w, cq, self.keys[0] ^ 0xdead, c.at);
                    self.log.lock().unwrap().push((0, None, None, w.now));
                }
            }
            _ => {}
        }
    }
}

#[test]
fn an_application_drives_the_nic_through_events() {
    let toml = r#"
        duration = "1ms"
        [topology.back_to_back]
        [links]
        rate = "100Gbps"
        delay = "1us"
        [nic.cc.none]
    "#;
    let loaded = LoadedScenario::from_str(toml, "test.toml", Path::new(".")).unwrap();
    let mut w = World::build(&loaded).unwrap();
    let k0 = w.register_mr(0, 0, LEN, Access::LOCAL_WRITE).unwrap().lkey;
    let k1 = w.register_mr(1, 0, LEN, Access::LOCAL_WRITE).unwrap().lkey;
    let log: Log = Default::default();
    let id = w.next_app_id();
    let app = PingPong { id, qps: (0, 0), keys: [k0, k1], rounds: 0, log: log.clone() };
    assert_eq!(w.add_application(Box::new(app)), id);
    let t = w.add_app_timer(id, 99);
    w.arm(t, Time::from_us(5));
    w.run(|_| true);

    let log = log.lock().unwrap();
    assert_eq!(log[0], (99, None, None, Time::from_us(5)));
    let recv = |tag| log.iter().filter(|e| e.0 == tag && e.1 == Some(CompletionKind::Recv) && e.2 == Some(Status::Success)).count();
    assert_eq!(recv(SERVER), ROUNDS as usize);
    assert_eq!(recv(CLIENT), ROUNDS as usize);
    // The error and the flushed receive are delivered after the post returned, not inside it.
    let posted = log.iter().position(|e| e.0 == 0).expect("the bad post returned");
    let error = log.iter().position(|e| e.0 == CLIENT && e.2 == Some(Status::LocalProtection)).expect("the bad post completes with an error");
    let flushed = log.iter().position(|e| e.0 == CLIENT && e.1 == Some(CompletionKind::Recv) && e.2 == Some(Status::Flushed)).expect("the posted receive is flushed");
    assert!(error > posted && flushed > posted, "error {error}, flush {flushed}, post returned {posted}");
    // Every round trip is two one-packet SENDs on an idle link, so rounds are evenly spaced:
    // each takes exactly as long as the first.
    let times: Vec<Time> = log.iter().filter(|e| e.0 == CLIENT && e.1 == Some(CompletionKind::Recv) && e.2 == Some(Status::Success)).map(|e| e.3).collect();
    let gaps: Vec<u64> = times.windows(2).map(|p| (p[1] - p[0]).0).collect();
    assert!(gaps.iter().all(|&g| g == gaps[0]), "{gaps:?}");
    // A round trip carries two 1000 B SENDs across the 1 µs link each way: at least
    // 2 × (serialization + propagation).
    let one_way = BitsPerSec::gbps(100).tx_time(LEN + Opcode::SendOnly.header_bytes() as u64) + Time::from_us(1);
    assert!(gaps[0] >= 2 * one_way.0, "{} < {}", gaps[0], 2 * one_way.0);
}

#[test]
fn a_long_chain_of_error_completions_is_delivered_without_deep_recursion() {
    // Messages far larger than memory fail at posting, each with an error completion the
    // perftest receives while it is still posting: 4,096 events queued behind its own call.
    // They are delivered one after another in a loop; a recursion per event overflowed the
    // stack (found by the fuzzer). A 256 KiB stack is plenty for the loop. (A scenario now
    // refuses such sizes when it is loaded: the world is handed them past the checks.)
    let text = "duration = \"5us\"\n[topology.star]\nhosts = 2\n[[perftest]]\ntest = \"write_bw\"\nclient = 0\nserver = 1\nmessage = \"4KB\"\nmessage_max = \"8KB\"\nqps = 64\ndepth = 64\n";
    assert!(LoadedScenario::from_str(&text.replace("8KB", "4294967296MB"), "big.toml", Path::new(".")).is_err(), "refused when loaded");
    let errors = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            let mut loaded = LoadedScenario::from_str(text, "big.toml", Path::new(".")).unwrap();
            loaded.scenario.perftest[0].message_max = Some(rnicsim::units::Bytes(4_294_967_296_000_000));
            let mut w = World::build(&loaded).unwrap();
            w.run(|_| true);
            rnicsim::output::Summary::of(&w, "big").perftest.iter().map(|p| p.errors).sum::<u64>()
        })
        .unwrap()
        .join()
        .expect("no overflow");
    assert_eq!(errors, 64 * 64);
}
