//! The bitmap against the paper's worked example (Fig. 6, 8-bit rows), hand-computed sizes,
//! and a reference model under random arrival orders, losses and a small memory.

use crate::reorder::{displaced_order, SplitMix};
use crate::*;
use proptest::prelude::*;
use std::collections::BTreeSet;

fn layer(block_bits: u32, cap_bits: u32, memory_blocks: u32) -> OrderingLayer {
    OrderingLayer::new(Config { block_bits, cap_bits, memory_blocks })
}

#[test]
fn fig6_grows_a_linear_row_and_merges_it_when_the_circular_part_flushes() {
    let mut l = layer(8, 64, 1024);
    let mut dba = NULL;
    assert_eq!(l.arrive(&mut dba, 0, 0, false), Arrival::InOrder { next: 1 });
    assert_eq!(dba, NULL, "no bitmap while packets arrive in order");
    assert_eq!(l.memory().bytes_in_use(), 0);
    // (a) 6 and 8 out of order: one circular row covering 1..=8.
    assert_eq!(l.arrive(&mut dba, 1, 6, false), Arrival::Tracked);
    assert_eq!(l.arrive(&mut dba, 1, 8, false), Arrival::Tracked);
    let v = l.view(dba).unwrap();
    assert_eq!((v.head, v.tail, v.circular_rows, v.rows, v.set.clone()), (1, 8, 1, 1, vec![6, 8]));
    // (b) 11 lies past Tail: a linear row for 9..=16, which also takes 15.
    assert_eq!(l.arrive(&mut dba, 1, 11, false), Arrival::Tracked);
    assert_eq!(l.arrive(&mut dba, 1, 15, false), Arrival::Tracked);
    let v = l.view(dba).unwrap();
    assert_eq!((v.head, v.tail, v.circular_rows, v.rows, v.set.clone()), (1, 8, 1, 2, vec![6, 8, 11, 15]));
    assert_eq!(l.stats().rows_added, 1);
    // (c) 1..=5 and 7: Head runs over 6 and 8, passes Tail, and the linear row joins the
    // circular part; Head stops at the first missing sequence, 9.
    let mut e = 1;
    for s in [1, 2, 3, 4, 5] {
        let Arrival::InOrder { next } = l.arrive(&mut dba, e, s, false) else { panic!("{s} is in order") };
        e = next;
    }
    assert_eq!(e, 7, "5 completes 6");
    assert_eq!(l.arrive(&mut dba, e, 7, false), Arrival::InOrder { next: 9 });
    let v = l.view(dba).unwrap();
    assert_eq!((v.head, v.tail, v.circular_rows, v.rows, v.set.clone()), (9, 24, 2, 2, vec![11, 15]));
    assert_eq!(l.stats().merges, 1);
    // A duplicate of a tracked or delivered sequence changes nothing.
    assert_eq!(l.arrive(&mut dba, 9, 11, false), Arrival::Duplicate);
    assert_eq!(l.arrive(&mut dba, 9, 3, false), Arrival::Duplicate);
}

#[test]
fn memory_is_metadata_plus_rows_and_is_released_at_the_last_packet() {
    let cfg = Config::default();
    // Paper (§3.4): 16 bytes of variables and 34 of addresses at a 256-bit cap, 16-bit blocks.
    assert_eq!(cfg.metadata_blocks() * BLOCK_BYTES, 50);
    let mut l = OrderingLayer::new(cfg);
    let mut dba = NULL;
    assert_eq!(l.arrive(&mut dba, 0, 40, false), Arrival::Tracked);
    // Offset 40 needs rows up to bit 40: one circular row (0..16) and two linear rows.
    assert_eq!(l.view(dba).unwrap().rows, 3);
    assert_eq!(l.bytes_of(dba), 50 + 3 * 2);
    assert_eq!(l.bitmap_bytes_of(dba), 6);
    assert_eq!(l.memory().bytes_in_use(), 56);
    assert_eq!(l.arrive(&mut dba, 0, 41, true), Arrival::Tracked);
    let mut e = 0;
    while e < 40 {
        let Arrival::InOrder { next } = l.arrive(&mut dba, e, e, false) else { panic!() };
        e = next;
        if e < 40 {
            assert_ne!(dba, NULL);
        }
    }
    assert_eq!(e, 42, "39 completes 40 and 41");
    assert_eq!(dba, NULL, "everything up to Last Seq arrived: released");
    assert_eq!(l.memory().bytes_in_use(), 0);
    assert_eq!(l.memory().peak_bytes(), 56);
    assert_eq!(l.stats().released, 1);
    // The full cap: 50 + 32 = 82 bytes, the most the paper gives (Table 2).
    let mut d2 = NULL;
    assert_eq!(l.arrive(&mut d2, 100, 355, false), Arrival::Tracked);
    assert_eq!(l.bytes_of(d2), 82);
    assert_eq!(l.arrive(&mut d2, 100, 356, false), Arrival::Refused(Refusal::Cap));
}

#[test]
fn a_bitmap_made_for_a_packet_it_cannot_reach_is_released_at_once() {
    // Room for a bitmap of one row (16 bits) and no more: a first out-of-order packet 20 past
    // the expected one needs a second row. The bitmap made for it stayed, empty, holding every
    // block until the connection's message ended; another connection was refused meanwhile.
    let cfg = Config { block_bits: 16, cap_bits: 64, memory_blocks: 0 };
    let cfg = Config { memory_blocks: cfg.metadata_blocks() + 1, ..cfg };
    let mut l = OrderingLayer::new(cfg);
    let (mut a, mut b) = (NULL, NULL);
    assert_eq!(l.arrive(&mut a, 0, 20, false), Arrival::Refused(Refusal::Memory));
    assert_eq!(a, NULL);
    assert_eq!(l.memory().blocks_in_use(), 0);
    assert_eq!(l.arrive(&mut b, 0, 3, false), Arrival::Tracked, "the memory is free for another connection");
    assert_eq!(l.arrive(&mut a, 0, 2, false), Arrival::Refused(Refusal::Memory));
    // Only the bitmap that tracked a packet counts as made (and released, when it goes).
    assert_eq!((l.stats().created, l.stats().released), (1, 0));
}

#[test]
fn a_full_memory_refuses_without_touching_other_connections() {
    let cfg = Config { block_bits: 16, cap_bits: 64, memory_blocks: 0 };
    // Room for one bitmap with two rows: 13 blocks of metadata + 2 rows.
    let cfg = Config { memory_blocks: cfg.metadata_blocks() + 2, ..cfg };
    let mut l = OrderingLayer::new(cfg);
    let (mut a, mut b) = (NULL, NULL);
    assert_eq!(l.arrive(&mut a, 0, 5, false), Arrival::Tracked);
    assert_eq!(l.arrive(&mut a, 0, 20, false), Arrival::Tracked);
    let before = l.view(a).unwrap();
    assert_eq!(l.arrive(&mut b, 0, 3, false), Arrival::Refused(Refusal::Memory));
    assert_eq!(b, NULL);
    assert_eq!(l.arrive(&mut a, 0, 40, false), Arrival::Refused(Refusal::Memory), "a third row does not fit");
    assert_eq!(l.view(a).unwrap(), before, "refusals leave the other bitmap as it was");
    assert_eq!(l.memory().blocks_in_use(), cfg.memory_blocks);
    l.release(&mut a);
    assert_eq!(l.memory().blocks_in_use(), 0);
    assert_eq!(l.arrive(&mut b, 0, 3, false), Arrival::Tracked, "released memory is reused");
}

#[test]
fn the_benchmark_delivers_everything_within_the_papers_byte_range() {
    let r = bench::run(Config { memory_blocks: 1 << 20, ..Config::default() }, 200, 200, 3, 0.025, 8, 7);
    assert!(r.all_delivered);
    assert_eq!(r.refused, 0);
    assert!((0.07..0.13).contains(&r.out_of_order_fraction), "{}", r.out_of_order_fraction);
    assert!((52.0..=82.0).contains(&r.mean_bytes_per_reordering_connection), "{r:?}");
}

/// The sender side of a model run: a queue of packets to deliver, refused ones sent again at
/// the back (as a NACK or timeout would), lost ones too.
fn model_run(seed: u64, conns: usize, packets: u32, fraction: f64, shift: u32, loss: f64, cfg: Config) {
    let mut rng = SplitMix(seed);
    let mut l = OrderingLayer::new(cfg);
    let mut queue: std::collections::VecDeque<(usize, u32)> = Default::default();
    let orders: Vec<Vec<u32>> = (0..conns).map(|_| displaced_order(packets, fraction, shift, &mut rng)).collect();
    let mut cur = vec![0usize; conns];
    let mut left = conns * packets as usize;
    while left > 0 {
        let c = rng.below(conns as u64) as usize;
        if cur[c] < packets as usize {
            queue.push_back((c, orders[c][cur[c]]));
            cur[c] += 1;
            left -= 1;
        }
    }
    let mut dba = vec![NULL; conns];
    let mut expected = vec![0u32; conns];
    let mut got: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); conns];
    let mut accepted = vec![0u32; conns];
    let mut steps = 0u64;
    while let Some((c, s)) = queue.pop_front() {
        steps += 1;
        assert!(steps < 10_000_000, "no progress");
        if rng.chance(loss) {
            queue.push_back((c, s));
            continue;
        }
        let out = l.arrive(&mut dba[c], expected[c], s, s == packets - 1);
        match out {
            Arrival::InOrder { next } => {
                assert_eq!(s, expected[c]);
                assert!(got[c].insert(s));
                accepted[c] += 1;
                let mut want = s + 1;
                while got[c].contains(&want) {
                    want += 1;
                }
                assert_eq!(next, want, "Head moves to the first missing sequence");
                expected[c] = next;
            }
            Arrival::Tracked => {
                assert!(s > expected[c]);
                assert!(got[c].insert(s), "a sequence is accepted once");
                accepted[c] += 1;
            }
            Arrival::Duplicate => assert!(got[c].contains(&s)),
            Arrival::Refused(_) => {
                assert!(!got[c].contains(&s));
                queue.push_back((c, s));
            }
        }
        if let Some(v) = l.view(dba[c]) {
            let want: Vec<u32> = got[c].range(expected[c]..).copied().collect();
            assert_eq!(v.set, want, "the bitmap holds exactly the sequences past Head");
            assert!(v.rows <= cfg.max_rows());
        }
        let blocks: u32 = dba.iter().filter_map(|&d| l.view(d)).map(|v| v.blocks).sum();
        assert_eq!(l.memory().blocks_in_use(), blocks, "accounting is the sum of allocated blocks");
    }
    for c in 0..conns {
        assert_eq!(expected[c], packets, "every sequence delivered in order");
        assert_eq!(accepted[c], packets, "each exactly once");
        assert_eq!(dba[c], NULL);
    }
    assert_eq!(l.memory().blocks_in_use(), 0);
    assert_eq!(l.memory().count_used(), 0, "every block is free at the end");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn random_orders_deliver_everything_once_and_free_every_block(
        seed in any::<u64>(),
        conns in 1usize..5,
        packets in 1u32..160,
        fraction in 0.0f64..1.0,
        shift in 0u32..90,
        loss in prop_oneof![Just(0.0), 0.0f64..0.2],
        block_bits in prop_oneof![Just(4u32), Just(8), Just(16), Just(24), Just(32)],
        rows in 1u32..9,
        spare in 0u32..80,
    ) {
        let cfg = Config { block_bits, cap_bits: block_bits * rows, memory_blocks: 0 };
        let least = cfg.metadata_blocks() + cfg.row_blocks();
        model_run(seed, conns, packets, fraction, shift, loss, Config { memory_blocks: least + spare, ..cfg });
    }
}
